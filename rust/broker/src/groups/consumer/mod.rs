//! KIP-848 consumer groups (the "consumer" group protocol): the coordinator assigns
//! partitions itself and members reconcile towards their targets incrementally.
//!
//! - `topics`: the topic snapshot an assignment is computed from, and assignment sets;
//! - `assignor`: the `uniform` and `range` server-side assignors;
//! - `reconcile`: one member's step towards its target (revoke first, then receive);
//! - `member`: one member, its subscription (names, regex) and timers;
//! - `group`: the group epoch, target assignment and partition owners;
//! - `heartbeat`: ConsumerGroupHeartbeat's checks and flow;
//! - `classic`: members using the classic protocol (JoinGroup, SyncGroup, Heartbeat);
//! - `commit`: OffsetCommit/OffsetFetch checks by member epoch;
//! - `persist`: the group's records in `__consumer_offsets`, and the group rebuilt from them.

pub mod assignor;
pub mod classic;
pub mod commit;
pub mod group;
pub mod heartbeat;
pub mod member;
pub mod persist;
pub mod reconcile;
pub mod topics;
pub mod written;

pub use assignor::Assignor;
pub use group::{ConsumerGroup, ConsumerGroupState};
pub use heartbeat::{Deadline, HeartbeatAnswer, HeartbeatRequest, Refusal};
pub use topics::{Assignment, TopicImage};

#[cfg(test)]
mod tests;
