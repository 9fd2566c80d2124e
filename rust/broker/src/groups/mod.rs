//! Consumer groups: Kafka's classic group protocol and committed offsets.
//!
//! - `coordinator`: every group of this node, and the glue to timers and persistence;
//! - `group`: one group's state machine; `member`: one member and its pending answers;
//! - `offsets`: a group's committed offsets and their retention;
//! - `records`: Kafka's key/value schemas of `__consumer_offsets`;
//! - `offsets_topic`: appending to and replaying `__consumer_offsets`;
//! - `timers`: session, rebalance and retention timers (tokio tasks);
//! - `config`: the `group.*` / `offsets.*` broker settings.
//!
//! On a single node this broker coordinates every group.

pub mod config;
pub mod coordinator;
pub mod group;
pub mod member;
pub mod offsets;
pub mod offsets_topic;
pub mod records;
mod timers;

pub use config::GroupConfig;
pub use coordinator::{GroupCoordinator, ListedGroup};
pub use group::{GroupDescription, GroupState, JoinRequest, MemberDescription, SyncRequest};
pub use member::{JoinResult, JoinedMember, Reply, SyncResult};
pub use offsets::Committed;

/// Kafka error codes of the group APIs.
pub mod errors {
    pub const NONE: i16 = 0;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const INVALID_GROUP_ID: i16 = 24;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const NON_EMPTY_GROUP: i16 = 68;
    pub const GROUP_ID_NOT_FOUND: i16 = 69;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
    pub const FENCED_INSTANCE_ID: i16 = 82;
    pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
}
