//! Produce: raw RecordBatch v2 bytes to partition leaders.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

use crate::address::Address;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::versions;

/// What the leader did with a produced batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Produced {
    /// Offset of the first record; -1 with acks=0 (no answer).
    pub base_offset: i64,
    /// -1 unless the topic uses LogAppendTime.
    pub log_append_time_ms: i64,
    /// -1 from brokers older than Produce v5 and with acks=0.
    pub log_start_offset: i64,
}

impl Client {
    /// Append `records` (one or more RecordBatch v2, offsets assigned by the leader) to
    /// `topic`/`partition`. `acks`: 0 (no answer), 1 (the leader's log), -1 (every in-sync
    /// replica). A partition error fails the call with its code.
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
        timeout_ms: i32,
    ) -> Result<Produced> {
        let mut answers = self
            .produce_batches(topic, vec![(partition, records)], acks, timeout_ms)
            .await?;
        answers.pop().expect("one answer per partition").1
    }

    /// Append each (partition, records) of `topic` as [`Client::produce`] does, in one
    /// Produce request per partition leader: a writer with batches for many partitions
    /// pays one round trip, not one per partition. Each partition gets its own result (its
    /// error code, or its offsets); a failed request fails the whole call. Partitions must
    /// be distinct: Kafka answers a partition once per request.
    pub async fn produce_batches(
        &mut self,
        topic: &str,
        batches: Vec<(i32, Bytes)>,
        acks: i16,
        timeout_ms: i32,
    ) -> Result<Vec<(i32, Result<Produced>)>> {
        let mut by_leader: BTreeMap<Address, Vec<(i32, Bytes)>> = BTreeMap::new();
        for (partition, records) in batches {
            let leader = self.leader_of(topic, partition).await?;
            by_leader
                .entry(leader)
                .or_default()
                .push((partition, records));
        }
        let mut answers = Vec::new();
        for (leader, batches) in by_leader {
            let partitions: Vec<i32> = batches.iter().map(|(p, _)| *p).collect();
            let build = |_| {
                ProduceRequest::default()
                    .with_acks(acks)
                    .with_timeout_ms(timeout_ms)
                    .with_topic_data(vec![TopicProduceData::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partition_data(
                            batches
                                .into_iter()
                                .map(|(partition, records)| {
                                    PartitionProduceData::default()
                                        .with_index(partition)
                                        .with_records(Some(records))
                                })
                                .collect(),
                        )])
            };
            if acks == 0 {
                self.send_only(&leader, ApiKey::Produce, versions::PRODUCE, build)
                    .await?;
                answers.extend(partitions.into_iter().map(|p| (p, Ok(NO_ANSWER))));
                continue;
            }
            let wait = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
            let (broker, _, response) = self
                .call(&leader, ApiKey::Produce, versions::PRODUCE, wait, build)
                .await?;
            let mut answered: BTreeMap<i32, _> = response
                .responses
                .into_iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partition_responses)
                .map(|p| (p.index, p))
                .collect();
            for partition in partitions {
                let what = format!("Produce to {topic}-{partition}");
                let result = match answered.remove(&partition) {
                    None => Err(Error::Protocol {
                        broker: broker.clone(),
                        message: format!("{what} answered without the partition"),
                    }),
                    Some(answer) if answer.error_code != error_codes::NONE => Err(Error::Broker {
                        broker: broker.clone(),
                        what,
                        code: answer.error_code,
                    }),
                    Some(answer) => Ok(Produced {
                        base_offset: answer.base_offset,
                        log_append_time_ms: answer.log_append_time_ms,
                        log_start_offset: answer.log_start_offset,
                    }),
                };
                answers.push((partition, result));
            }
        }
        Ok(answers)
    }
}

/// What acks=0 gets: no answer, so no offsets.
const NO_ANSWER: Produced = Produced {
    base_offset: -1,
    log_append_time_ms: -1,
    log_start_offset: -1,
};
