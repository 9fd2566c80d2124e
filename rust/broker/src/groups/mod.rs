//! Consumer groups: Kafka's classic group protocol, KIP-848's consumer protocol, and
//! committed offsets.
//!
//! - `coordinator`: every group of this node, and the glue to timers and persistence;
//! - `group`: one group's state machine; `member`: one member and its pending answers;
//! - `consumer`: KIP-848 consumer-protocol groups (assignors, reconciliation);
//! - `consumer_requests`: ConsumerGroupHeartbeat and ConsumerGroupDescribe, and which
//!   protocol a group id belongs to;
//! - `consumer_protocol`: the embedded consumer protocol's subscription and assignment;
//! - `consumer_records`: Kafka's schemas of a consumer group's records in `__consumer_offsets`;
//! - `offsets`: a group's committed offsets and their retention;
//! - `offset_requests`: OffsetCommit, OffsetFetch, OffsetDelete and offset upkeep;
//! - `txn_offsets`: offsets of open transactions (TxnOffsetCommit), settled by markers;
//! - `records`: Kafka's key/value schemas of `__consumer_offsets`;
//! - `offsets_topic`: appending to and replaying `__consumer_offsets`;
//! - `placement`: in cluster mode, loading and unloading the groups of the partitions
//!   this broker leads (`coordinator::runtime`);
//! - session, rebalance and retention timers run on the coordinator runtime's
//!   (`coordinator::timers`);
//! - `config`: the `group.*` / `offsets.*` broker settings.
//!
//! On a single node this broker coordinates every group; in a cluster, the groups of the
//! `__consumer_offsets` partitions it leads.

pub mod config;
pub mod consumer;
pub mod consumer_protocol;
pub mod consumer_records;
mod consumer_requests;
pub mod coordinator;
pub mod group;
pub mod host;
pub mod member;
mod offset_requests;
pub mod offsets;
pub mod offsets_topic;
pub mod operation;
mod placement;
pub mod records;
pub mod txn_offsets;

pub use config::GroupConfig;
pub use coordinator::{GroupCoordinator, ListedGroup};
pub use group::{GroupDescription, GroupState, JoinRequest, MemberDescription, SyncRequest};
pub use member::{JoinResult, JoinedMember, Reply, SyncResult};
pub use offsets::Committed;

/// Kafka error codes, from the one table (group code names them `errors::X`).
pub use kafkalite_core::error_codes as errors;
