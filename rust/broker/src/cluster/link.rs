//! Cluster mode (`zookeeper.connect` set): what the broker's Python side pushes in and
//! drains out. The controller's decisions arrive as whole `ClusterSnapshot`s (every live
//! broker, the controller, every topic with each partition's leader, epoch, replicas and
//! ISR); admin requests that change metadata leave through the `AdminBridge`.

use std::collections::BTreeMap;
use std::sync::RwLock;

use super::admin_bridge::AdminBridge;
use super::metadata_view::BrokerNode;
use super::partition::ReplicaState;
pub use super::topic::check_leader;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSnapshot {
    pub name: String,
    pub id: uuid::Uuid,
    /// Topic-level overrides (`/config/topics/<t>`).
    pub configs: BTreeMap<String, String>,
    /// Every partition, by index.
    pub partitions: Vec<(i32, ReplicaState)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSnapshot {
    pub cluster_id: String,
    pub controller_id: i32,
    pub brokers: Vec<BrokerNode>,
    pub topics: Vec<TopicSnapshot>,
}

/// The cluster-wide part of the last snapshot (topics live in the registry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    pub cluster_id: String,
    /// -1 until a controller is known, as Kafka answers.
    pub controller_id: i32,
    pub brokers: Vec<BrokerNode>,
}

pub struct ClusterLink {
    pub info: RwLock<ClusterInfo>,
    pub admin: AdminBridge,
    /// The broker's runtime, once it runs: coordinators load partitions inside it (their
    /// timers are tokio tasks) while snapshots arrive on a Python thread.
    pub runtime: std::sync::OnceLock<tokio::runtime::Handle>,
    /// A background thread is opening the logs of partitions placed here later
    /// (`cluster_sync`); one at a time.
    pub hosting: std::sync::atomic::AtomicBool,
    /// Set (under the admin lock) once the broker closes its logs: no log opens after.
    pub closing: std::sync::atomic::AtomicBool,
}

impl ClusterLink {
    #[must_use]
    pub fn new(cluster_id: &str) -> ClusterLink {
        ClusterLink {
            info: RwLock::new(ClusterInfo {
                cluster_id: cluster_id.to_string(),
                controller_id: -1,
                brokers: Vec::new(),
            }),
            admin: AdminBridge::default(),
            runtime: std::sync::OnceLock::new(),
            hosting: std::sync::atomic::AtomicBool::new(false),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    #[must_use]
    pub fn info(&self) -> ClusterInfo {
        self.info.read().expect("lock").clone()
    }
}
