//! Produce: raw RecordBatch v2 bytes to one partition's leader.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

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
        let leader = self.leader_of(topic, partition).await?;
        let build = |_| {
            ProduceRequest::default()
                .with_acks(acks)
                .with_timeout_ms(timeout_ms)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records))])])
        };
        if acks == 0 {
            self.send_only(&leader, ApiKey::Produce, versions::PRODUCE, build)
                .await?;
            return Ok(Produced {
                base_offset: -1,
                log_append_time_ms: -1,
                log_start_offset: -1,
            });
        }
        let wait = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
        let (broker, _, response) = self
            .call(&leader, ApiKey::Produce, versions::PRODUCE, wait, build)
            .await?;
        let what = || format!("Produce to {topic}-{partition}");
        let answer = response
            .responses
            .into_iter()
            .filter(|t| t.name.0.as_str() == topic)
            .flat_map(|t| t.partition_responses)
            .find(|p| p.index == partition)
            .ok_or_else(|| Error::Protocol {
                broker: broker.clone(),
                message: format!("{} answered without the partition", what()),
            })?;
        if answer.error_code != error_codes::NONE {
            return Err(Error::Broker {
                broker,
                what: what(),
                code: answer.error_code,
            });
        }
        Ok(Produced {
            base_offset: answer.base_offset,
            log_append_time_ms: answer.log_append_time_ms,
            log_start_offset: answer.log_start_offset,
        })
    }
}
