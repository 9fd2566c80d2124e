//! The Metadata request; its answer is the view in `cluster.rs`.

use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{ApiKey, MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::address::Address;
use crate::client::Client;
use crate::cluster::{Metadata, PartitionMetadata, TopicMetadata};
use crate::error::Result;
use crate::versions;

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
