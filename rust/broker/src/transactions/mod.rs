//! Transactions: Kafka's transaction coordinator over `__transaction_state`.
//!
//! - `coordinator`: every transactional id of this node and the protocol's state machine;
//!   `completion`: EndTxn and completing a transaction;
//! - `placement`: in cluster mode, loading and unloading the ids of the
//!   `__transaction_state` partitions this broker leads (`coordinator::runtime`);
//! - `timers`: transaction timeouts and id expiration; `queries`: what Produce and the
//!   describe APIs ask;
//! - `state`: one id's state (Kafka's `TransactionMetadata`); `status`: its status;
//! - `records`: Kafka's key/value schemas of `__transaction_state`;
//! - `log_topic`: appending to and replaying `__transaction_state`;
//! - `markers`: writing COMMIT/ABORT control batches into a transaction's partitions;
//! - `config`: the `transaction.*` broker settings.
//!
//! The partitions' side (open transactions, last stable offset, aborted transactions in
//! `.txnindex`) lives in `kafkalite_core::storage::txn_index`.
//!
//! Placement: a transactional id belongs to partition `partition_for(id, n)` of
//! `__transaction_state` and is coordinated by that partition's leader; on a single node
//! this broker leads every partition and so coordinates every id.

mod completion;
pub mod config;
pub mod coordinator;
pub mod host;
pub mod log_topic;
pub mod markers;
mod placement;
mod queries;
pub mod records;
pub mod state;
pub mod status;
mod timers;

pub use config::TxnConfig;
pub use coordinator::TransactionCoordinator;
