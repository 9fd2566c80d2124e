//! What a coordinator asks of the broker it runs in. `BrokerState` implements it (and the
//! coordinators' own extensions of it, `groups::host` and `transactions::host`); a
//! coordinator keeps a weak reference to it, bound when the broker opens the coordinator.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::cluster::partition::Partition;
use crate::cluster::topic::Topic;
use crate::errors::ApiError;

pub trait CoordinatorHost: Send + Sync {
    /// This broker's node id.
    fn node_id(&self) -> i32;
    /// A topic of the broker's registry.
    fn topic(&self, name: &str) -> Option<Arc<Topic>>;
    /// Every topic's name.
    fn topic_names(&self) -> Vec<String>;
    /// A partition of a topic, if this broker hosts it.
    fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topic(topic).and_then(|t| t.partition(index))
    }
    /// Create an internal topic on a single node (the coordinator's, at its first write).
    fn create_internal_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError>;
    /// Woken after an append, so fetches waiting for data look again.
    fn data_arrived(&self) -> &Notify;
}
