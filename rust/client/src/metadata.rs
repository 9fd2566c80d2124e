//! Metadata: the cluster's brokers and the topics' partitions, leaders and replicas.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{ApiKey, MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::address::Address;
use crate::client::Client;
use crate::error::Result;
use crate::versions;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metadata {
    /// node id -> address.
    pub brokers: BTreeMap<i32, Address>,
    /// Every topic the broker described, with or without an error.
    pub topics: BTreeMap<String, TopicMetadata>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopicMetadata {
    /// 0, or why the topic could not be described (3: UNKNOWN_TOPIC_OR_PARTITION).
    pub error_code: i16,
    pub is_internal: bool,
    /// By partition index.
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionMetadata {
    pub partition: i32,
    pub error_code: i16,
    /// Node id of the leader, -1 when there is none.
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

impl Metadata {
    /// Where the leader of `topic`/`partition` listens, when known.
    #[must_use]
    pub fn leader_address(&self, topic: &str, partition: i32) -> Option<Address> {
        let leader = self
            .topics
            .get(topic)?
            .partitions
            .iter()
            .find(|p| p.partition == partition)?
            .leader;
        self.brokers.get(&leader).cloned()
    }
}

impl Client {
    /// Describe `topics` (`None`: every topic) without creating any; the answer also
    /// becomes the cache that routes requests to leaders.
    pub async fn metadata(&mut self, topics: Option<&[String]>) -> Result<Metadata> {
        let address = self.any_broker().await?;
        let (_, _, response) = self
            .call(
                &address,
                ApiKey::Metadata,
                versions::METADATA,
                Duration::ZERO,
                |version| {
                    let request = MetadataRequest::default().with_topics(topics.map(|names| {
                        names
                            .iter()
                            .map(|name| {
                                MetadataRequestTopic::default()
                                    .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                            })
                            .collect()
                    }));
                    // The field exists from v4; before it, brokers never auto-create here.
                    if version >= 4 {
                        request.with_allow_auto_topic_creation(false)
                    } else {
                        request
                    }
                },
            )
            .await?;
        let mut metadata = Metadata::default();
        for broker in response.brokers {
            let Ok(port) = u16::try_from(broker.port) else {
                continue;
            };
            metadata.brokers.insert(
                broker.node_id.0,
                Address {
                    host: broker.host.to_string(),
                    port,
                },
            );
        }
        for topic in response.topics {
            let Some(name) = topic.name else { continue };
            let mut partitions: Vec<PartitionMetadata> = topic
                .partitions
                .into_iter()
                .map(|p| PartitionMetadata {
                    partition: p.partition_index,
                    error_code: p.error_code,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                    isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            metadata.topics.insert(
                name.0.to_string(),
                TopicMetadata {
                    error_code: topic.error_code,
                    is_internal: topic.is_internal,
                    partitions,
                },
            );
        }
        self.metadata = Some(metadata.clone());
        Ok(metadata)
    }
}
