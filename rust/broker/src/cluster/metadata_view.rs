//! The broker's view of cluster metadata, as one plain value: cluster id, controller, live
//! brokers with their endpoints and racks, and every topic with its id and each
//! partition's leader, leader epoch, replicas and ISR. Metadata and DescribeCluster answer
//! from it. On a single node the file store feeds it (through the topic registry, every
//! partition led by this node in epoch 0); in cluster mode the controller's snapshots do
//! (`cluster_sync` sets each partition's replica state and the live brokers).

use super::partition::ReplicaState;
use super::topics::{Topic, TopicRegistry};

/// A live broker as clients are told about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerNode {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// Every registered listener: (name, host, port); brokers reach each other on the
    /// one `inter.broker.listener.name` names.
    pub endpoints: Vec<(String, String, i32)>,
}

impl BrokerNode {
    /// The broker as a client of `listener` reaches it: its endpoint of that name, as
    /// Kafka's metadata cache answers each listener (`None` when it has no such listener;
    /// unchanged when no listener is named or no endpoints are known).
    #[must_use]
    pub fn on_listener(self, listener: &str) -> Option<BrokerNode> {
        if listener.is_empty() || self.endpoints.is_empty() {
            return Some(self);
        }
        let (_, host, port) = self.endpoints.iter().find(|(n, _, _)| n == listener)?;
        Some(BrokerNode {
            host: host.clone(),
            port: *port,
            ..self
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionView {
    pub index: i32,
    pub replica: ReplicaState,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicView {
    pub name: String,
    pub id: uuid::Uuid,
    pub is_internal: bool,
    pub partitions: Vec<PartitionView>,
}

impl TopicView {
    #[must_use]
    pub fn of(topic: &Topic) -> TopicView {
        let partitions = topic
            .replica_states()
            .into_iter()
            .zip(0..)
            .map(|(replica, index)| PartitionView { index, replica })
            .collect();
        TopicView {
            name: topic.name.clone(),
            id: topic.id,
            is_internal: topic.is_internal(),
            partitions,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataView {
    pub cluster_id: String,
    pub controller_id: i32,
    pub brokers: Vec<BrokerNode>,
    /// In name order.
    pub topics: Vec<TopicView>,
}

impl MetadataView {
    /// A snapshot of every topic in `registry`.
    #[must_use]
    pub fn snapshot(
        cluster_id: &str,
        controller_id: i32,
        brokers: Vec<BrokerNode>,
        registry: &TopicRegistry,
    ) -> MetadataView {
        MetadataView {
            cluster_id: cluster_id.to_string(),
            controller_id,
            brokers,
            topics: registry.all().iter().map(|t| TopicView::of(t)).collect(),
        }
    }

    #[must_use]
    pub fn topic(&self, name: &str) -> Option<&TopicView> {
        self.topics.iter().find(|t| t.name == name)
    }

    #[must_use]
    pub fn broker(&self, node_id: i32) -> Option<&BrokerNode> {
        self.brokers.iter().find(|b| b.node_id == node_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kafkalite_core::storage::LogConfig;

    use super::*;
    use crate::cluster::file_store::TopicRecord;
    use crate::cluster::topics::INTERNAL_OFFSETS_TOPIC;

    #[test]
    fn single_node_view_leads_every_partition_in_epoch_zero() {
        let dir = tempfile::tempdir().unwrap();
        let registry =
            TopicRegistry::new(vec![dir.path().to_path_buf()], ReplicaState::single_node(7));
        let record = |partitions| TopicRecord {
            id: uuid::Uuid::new_v4(),
            partitions,
            configs: BTreeMap::new(),
        };
        let config = LogConfig::default();
        let orders = registry
            .open_topic("orders", record(2), &config, true)
            .unwrap();
        registry
            .open_topic(INTERNAL_OFFSETS_TOPIC, record(1), &config, true)
            .unwrap();
        let node = BrokerNode {
            node_id: 7,
            host: "localhost".into(),
            port: 9092,
            rack: None,
            endpoints: Vec::new(),
        };
        let view = MetadataView::snapshot("cid", 7, vec![node.clone()], &registry);
        assert_eq!(view.cluster_id, "cid");
        assert_eq!(view.broker(7), Some(&node));
        assert_eq!(view.broker(8), None);
        assert_eq!(
            view.topics
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            [INTERNAL_OFFSETS_TOPIC, "orders"]
        );
        let t = view.topic("orders").unwrap();
        assert_eq!(t.id, orders.id);
        assert!(!t.is_internal);
        assert!(view.topic(INTERNAL_OFFSETS_TOPIC).unwrap().is_internal);
        assert_eq!(t.partitions.len(), 2);
        for (i, p) in t.partitions.iter().enumerate() {
            assert_eq!(p.index, i as i32);
            assert_eq!(p.replica.leader, 7);
            assert_eq!(p.replica.leader_epoch, 0);
            assert_eq!(p.replica.replicas, [7]);
            assert_eq!(p.replica.isr, [7]);
        }
        // A controller's decision shows in the next snapshot.
        orders
            .partition(1)
            .unwrap()
            .set_replica_state(ReplicaState {
                leader: 8,
                leader_epoch: 3,
                replicas: vec![7, 8],
                isr: vec![8],
            });
        let view = MetadataView::snapshot("cid", 7, vec![node], &registry);
        let p1 = &view.topic("orders").unwrap().partitions[1];
        assert_eq!((p1.replica.leader, p1.replica.leader_epoch), (8, 3));
        assert_eq!(p1.replica.isr, [8]);
    }

    #[test]
    fn a_broker_is_reached_on_the_listener_asked_about() {
        let node = BrokerNode {
            node_id: 2,
            host: "10.0.0.2".into(),
            port: 9092,
            rack: None,
            endpoints: vec![
                ("PLAINTEXT".into(), "10.0.0.2".into(), 9092),
                ("SASL_SSL".into(), "b2.example".into(), 9094),
            ],
        };
        let sasl = node.clone().on_listener("SASL_SSL").unwrap();
        assert_eq!((sasl.host.as_str(), sasl.port), ("b2.example", 9094));
        assert_eq!(node.clone().on_listener("").unwrap(), node);
        assert_eq!(
            node.on_listener("INTERNAL"),
            None,
            "no such listener: left out"
        );
    }
}
