//! Fetch: one partition's record batches from an offset, as the raw bytes the broker sent
//! (complete batches, possibly a trailing partial one); nothing is decoded per record.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::versions;

/// Isolation levels of a Fetch: every record, or only those of committed transactions.
pub const READ_UNCOMMITTED: i8 = 0;
pub const READ_COMMITTED: i8 = 1;

#[derive(Clone, Debug, PartialEq)]
pub struct FetchedPartition {
    /// 0, or the partition's error (1: OFFSET_OUT_OF_RANGE, ...).
    pub error_code: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    /// -1 from brokers older than Fetch v5.
    pub log_start_offset: i64,
    /// The records section as sent.
    pub records: Bytes,
    /// read_committed: the aborted transactions in the records, (producer id, first
    /// offset); their batches are the reader's to skip.
    pub aborted_transactions: Vec<(i64, i64)>,
}

impl Client {
    /// One Fetch of `topic`/`partition` from `offset` at its leader; the broker may hold it
    /// up to `max_wait_ms` for data to arrive.
    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
        max_wait_ms: i32,
        isolation_level: i8,
    ) -> Result<FetchedPartition> {
        let leader = self.leader_of(topic, partition).await?;
        let wait = Duration::from_millis(u64::try_from(max_wait_ms).unwrap_or(0));
        let (broker, _, response) = self
            .call(&leader, ApiKey::Fetch, versions::FETCH, wait, |_| {
                FetchRequest::default()
                    .with_max_wait_ms(max_wait_ms)
                    .with_min_bytes(1)
                    .with_max_bytes(max_bytes)
                    .with_isolation_level(isolation_level)
                    .with_topics(vec![FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partitions(vec![FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(max_bytes)])])
            })
            .await?;
        let what = || format!("Fetch of {topic}-{partition} at offset {offset}");
        if response.error_code != error_codes::NONE {
            return Err(Error::Broker {
                broker,
                what: what(),
                code: response.error_code,
            });
        }
        let data = response
            .responses
            .into_iter()
            .filter(|t| t.topic.0.as_str() == topic)
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| Error::Protocol {
                broker,
                message: format!("{} answered without the partition", what()),
            })?;
        Ok(FetchedPartition {
            error_code: data.error_code,
            high_watermark: data.high_watermark,
            last_stable_offset: data.last_stable_offset,
            log_start_offset: data.log_start_offset,
            records: data.records.unwrap_or_default(),
            aborted_transactions: data
                .aborted_transactions
                .unwrap_or_default()
                .iter()
                .map(|a| (a.producer_id.0, a.first_offset))
                .collect(),
        })
    }
}
