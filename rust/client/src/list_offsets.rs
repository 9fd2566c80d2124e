//! ListOffsets: the earliest or latest offset of partitions, or the first offset at or
//! after a timestamp.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

use crate::address::Address;
use crate::client::Client;
use crate::cluster::TopicPartition;
use crate::error::{Error, Result};
use crate::fetch::READ_UNCOMMITTED;
use crate::versions;

/// The timestamp that asks for the log start offset.
pub const EARLIEST: i64 = -2;
/// The timestamp that asks for the log end offset.
pub const LATEST: i64 = -1;

/// topic -> (partition, timestamp) asked of one leader.
type PartitionsByTopic<'a> = BTreeMap<&'a str, Vec<(i32, i64)>>;

impl Client {
    /// For each (topic, partition) -> timestamp (or [`EARLIEST`]/[`LATEST`]), the offset
    /// the partition's leader answers: -1 when no record has a timestamp at or after the
    /// one asked. One request per leader; a partition error fails the call.
    pub async fn list_offsets(
        &mut self,
        wanted: &BTreeMap<TopicPartition, i64>,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        self.list_offsets_isolated(wanted, READ_UNCOMMITTED).await
    }

    /// [`Client::list_offsets`] at an isolation level: with [`crate::fetch::READ_COMMITTED`],
    /// [`LATEST`] is the last stable offset (the end of what committed readers may see).
    pub async fn list_offsets_isolated(
        &mut self,
        wanted: &BTreeMap<TopicPartition, i64>,
        isolation_level: i8,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        let mut by_leader: BTreeMap<Address, PartitionsByTopic<'_>> = BTreeMap::new();
        for ((topic, partition), &timestamp) in wanted {
            let leader = self.leader_of(topic, *partition).await?;
            by_leader
                .entry(leader)
                .or_default()
                .entry(topic.as_str())
                .or_default()
                .push((*partition, timestamp));
        }
        let mut out = BTreeMap::new();
        for (address, topics) in by_leader {
            let (broker, _, response) = self
                .call(
                    &address,
                    ApiKey::ListOffsets,
                    versions::LIST_OFFSETS,
                    Duration::ZERO,
                    |_| {
                        ListOffsetsRequest::default()
                            .with_replica_id(BrokerId(-1))
                            .with_isolation_level(isolation_level)
                            .with_topics(
                                topics
                                    .iter()
                                    .map(|(topic, partitions)| {
                                        ListOffsetsTopic::default()
                                            .with_name(TopicName(StrBytes::from_string(
                                                (*topic).to_string(),
                                            )))
                                            .with_partitions(
                                                partitions
                                                    .iter()
                                                    .map(|&(partition, timestamp)| {
                                                        ListOffsetsPartition::default()
                                                            .with_partition_index(partition)
                                                            .with_timestamp(timestamp)
                                                    })
                                                    .collect(),
                                            )
                                    })
                                    .collect(),
                            )
                    },
                )
                .await?;
            for topic in response.topics {
                for p in topic.partitions {
                    let tp = (topic.name.0.to_string(), p.partition_index);
                    if p.error_code != error_codes::NONE {
                        return Err(Error::Broker {
                            broker,
                            what: format!("ListOffsets for {}-{}", tp.0, tp.1),
                            code: p.error_code,
                        });
                    }
                    out.insert(tp, p.offset);
                }
            }
        }
        Ok(out)
    }
}
