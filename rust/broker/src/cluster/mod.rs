//! The broker's view of the cluster and the partitions it hosts.
//!
//! - `metadata_view`: cluster id, live brokers, topics and each partition's leader, epoch,
//!   replicas and ISR, as one value Metadata answers from;
//! - `topics`: the topic registry (topics, their partitions across log dirs, overrides);
//! - `topic`: one topic, each partition hosted here or only described (cluster mode);
//! - `partition`: one partition = log + producer state + leader-epoch cache + replica
//!   state, with the high watermark kept apart from the log end;
//! - `file_store`: the single-node source of topics, `topics.json`;
//! - `partition_txns`: a partition's last stable offset and aborted transactions;
//! - `partition_dirs`: partition dirs on disk (topic-id file, `-delete` renames, cleaning
//!   what a crash left at start);
//! - `log_dir_placement`: which of several log dirs (JBOD) holds a partition;
//! - `replica_move`: moving a partition's log to another log dir (AlterReplicaLogDirs);
//! - `replica_progress`: a leader's view of its followers (log ends, caught-up times);
//! - `producer_ids`: InitProducerId's id counter;
//! - `link`: cluster mode's snapshots from the controller and leadership checks;
//! - `admin_bridge`: metadata-changing admin requests handed to the controller side;
//!
//! Nothing here reaches back into `state`: `BrokerState` composes these parts.

pub mod admin_bridge;
pub mod file_store;
pub mod link;
pub mod log_dir_placement;
pub mod metadata_view;
pub mod partition;
pub mod partition_dirs;
mod partition_txns;
pub mod producer_ids;
pub mod replica_move;
pub mod replica_progress;
pub mod topic;
pub mod topics;

pub use admin_bridge::{AdminBridge, AdminOp};
pub use file_store::{FileStore, StoredMetadata, TopicRecord};
pub use link::{check_leader, ClusterInfo, ClusterLink, ClusterSnapshot, TopicSnapshot};
pub use metadata_view::{BrokerNode, MetadataView, PartitionView, TopicView};
pub use partition::{Partition, ReplicaState};
pub use producer_ids::ProducerIds;
pub use topics::{
    validate_topic_name, Placement, Slot, Topic, TopicRegistry, INTERNAL_OFFSETS_TOPIC,
    INTERNAL_TXN_TOPIC,
};
