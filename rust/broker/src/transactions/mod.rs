//! Transactions: Kafka's transaction coordinator over `__transaction_state`.
//!
//! - `coordinator`: every transactional id of this node and the protocol's state machine;
//! - `timers`: transaction timeouts and id expiration; `queries`: what Produce, OffsetFetch
//!   and the describe APIs ask;
//! - `state`: one id's state (Kafka's `TransactionMetadata`);
//! - `records`: Kafka's key/value schemas of `__transaction_state`;
//! - `log_topic`: appending to and replaying `__transaction_state`;
//! - `markers`: writing COMMIT/ABORT control batches into a transaction's partitions;
//! - `config`: the `transaction.*` broker settings.
//!
//! The partitions' side (open transactions, last stable offset, aborted transactions in
//! `.txnindex`) lives in `kafkalite_core::storage::txn_index`.
//!
//! Placement: a transactional id belongs to partition `partition_for(id, n)` of
//! `__transaction_state`; on a single node this broker leads every partition and so
//! coordinates every id.

pub mod config;
pub mod coordinator;
pub mod log_topic;
pub mod markers;
mod queries;
pub mod records;
pub mod state;
mod timers;

pub use config::TxnConfig;
pub use coordinator::TransactionCoordinator;
