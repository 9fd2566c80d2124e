//! Persistence in the internal compacted topic `__consumer_offsets`: which partition holds a
//! group (Kafka's `abs(groupId.hashCode) % partitions`), appending its records, and
//! replaying the topic at startup.
//!
//! Every record is keyed (by group, topic and partition for offsets; by group for its
//! metadata; by group and member for a consumer group's members), so compaction keeps
//! exactly the latest state; a null value deletes.

use std::collections::HashMap;
use std::sync::Arc;

use kafkalite_core::records::RecordInput;

use super::consumer::written::Written;
use super::consumer_records::{self, ConsumerKey, ConsumerValue};
use super::offsets::{Committed, Offsets, PendingTxnOffset};
use super::records::{
    decode_group_value, decode_key, decode_offset_value, encode_group_key, encode_group_value,
    encode_offset_key, encode_offset_value, GroupRecord, RecordKey,
};
use crate::cluster::Partition;
use crate::coordinator::internal_log::{self, Entry, Placement, Writes};
use crate::errors::ApiError;

/// Kafka's partition of a group (the placement every partitioned coordinator shares).
pub use crate::coordinator::runtime::partition_for;

/// One record to write for a group.
pub enum Write<'a> {
    Offset(&'a str, i32, Option<&'a Committed>),
    Group(Option<&'a GroupRecord>),
    /// A consumer group's record (`consumer_records`).
    Consumer(&'a ConsumerKey, Option<&'a ConsumerValue>),
}

/// What replay found for one group.
#[derive(Default)]
pub struct LoadedGroup {
    pub metadata: Option<GroupRecord>,
    pub offsets: Offsets,
    /// Its records as a consumer group (`exists()` if it is one).
    pub consumer: Written,
}

impl LoadedGroup {
    fn is_empty(&self) -> bool {
        self.metadata.is_none() && self.offsets.is_empty() && !self.consumer.exists()
    }
}

/// What replay found: the groups, and the offsets of transactions still open (by producer
/// id), which their markers will commit or drop.
#[derive(Default)]
pub struct Loaded {
    pub groups: HashMap<String, LoadedGroup>,
    pub pending: HashMap<i64, Vec<PendingTxnOffset>>,
}

pub struct OffsetsTopic {
    /// The topic's id: a recreated topic is a new store.
    pub topic_id: uuid::Uuid,
    /// By index; `None` where this broker hosts no replica (cluster mode).
    partitions: Vec<Option<Arc<Partition>>>,
    placement: Placement,
    writes: Writes,
}

impl OffsetsTopic {
    #[must_use]
    pub fn new(
        topic_id: uuid::Uuid,
        partitions: Vec<Option<Arc<Partition>>>,
        placement: Placement,
        writes: Writes,
    ) -> OffsetsTopic {
        OffsetsTopic {
            topic_id,
            partitions,
            placement,
            writes,
        }
    }

    #[must_use]
    pub fn partition_count(&self) -> i32 {
        self.partitions.len() as i32
    }

    /// Whether `partitions` are the very partitions this store writes to.
    #[must_use]
    pub fn same_partitions(&self, partitions: &[Option<Arc<Partition>>]) -> bool {
        self.partitions.len() == partitions.len()
            && self
                .partitions
                .iter()
                .zip(partitions)
                .all(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                })
    }

    /// The group's partition; NOT_COORDINATOR when this broker hosts no replica of it (the
    /// coordinator checks leadership first, so only a race with a move gets here).
    fn partition(&self, group: &str) -> Result<&Arc<Partition>, ApiError> {
        self.partitions[self.index_of(group) as usize]
            .as_ref()
            .ok_or_else(|| {
                ApiError::new(
                    crate::errors::codes::NOT_COORDINATOR,
                    format!("this broker hosts no replica of the partition of group '{group}'"),
                )
            })
    }

    /// The index of the partition holding `group`.
    #[must_use]
    pub fn index_of(&self, group: &str) -> i32 {
        partition_for(group, self.partition_count())
    }

    /// Append a group's records as one batch to its partition; all or nothing.
    /// `producer`: a transaction's offsets (TxnOffsetCommit), committed by its marker.
    /// `replicated`: in cluster mode, return once the ISR has the batch.
    pub fn append(
        &self,
        group: &str,
        writes: &[Write],
        producer: Option<(i64, i16)>,
        replicated: bool,
        now_ms: i64,
        wake: &tokio::sync::Notify,
    ) -> Result<(), ApiError> {
        if writes.is_empty() {
            return Ok(());
        }
        let records: Vec<RecordInput> = writes
            .iter()
            .map(|w| {
                let (key, value) = match w {
                    Write::Offset(topic, partition, c) => (
                        encode_offset_key(group, topic, *partition),
                        c.map(encode_offset_value),
                    ),
                    Write::Group(g) => (encode_group_key(group), g.map(encode_group_value)),
                    Write::Consumer(key, value) => (
                        consumer_records::encode_key(key),
                        value.map(consumer_records::encode_value),
                    ),
                };
                RecordInput {
                    timestamp: now_ms,
                    key: Some(key),
                    value,
                    headers: Vec::new(),
                }
            })
            .collect();
        internal_log::append(
            self.partition(group)?,
            &records,
            producer,
            now_ms,
            self.placement,
            self.writes,
            replicated,
            wake,
        )
    }

    /// Read every partition from its start and rebuild each group's latest metadata and
    /// offsets (tombstones delete). Records that do not decode are skipped.
    pub fn replay(&self) -> anyhow::Result<Loaded> {
        let mut loaded = Loaded::default();
        for partition in self.partitions.iter().flatten() {
            replay_into(partition, self.writes.load_buffer_bytes, &mut loaded)?;
        }
        loaded.groups.retain(|_, g| !g.is_empty());
        Ok(loaded)
    }
}

/// Rebuild the groups stored in one partition (what a new coordinator of it loads).
pub fn replay_partition(partition: &Partition, buffer_bytes: usize) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    replay_into(partition, buffer_bytes, &mut loaded)?;
    loaded.groups.retain(|_, g| !g.is_empty());
    Ok(loaded)
}

fn replay_into(
    partition: &Partition,
    buffer_bytes: usize,
    loaded: &mut Loaded,
) -> anyhow::Result<()> {
    internal_log::replay(partition, buffer_bytes, |entry| match entry {
        Entry::Records {
            producer_id: None,
            records,
        } => {
            for record in records {
                apply(
                    &mut loaded.groups,
                    record.key.as_deref(),
                    record.value.as_deref(),
                );
            }
        }
        // A transaction's offsets wait for its marker (Kafka's pending transactional
        // offsets); a later batch of the same transaction replaces a partition's offset.
        Entry::Records {
            producer_id: Some(producer_id),
            records,
        } => {
            let pending = loaded.pending.entry(producer_id).or_default();
            for record in records {
                let Some(RecordKey::Offset {
                    group,
                    topic,
                    partition,
                }) = record.key.as_deref().and_then(decode_key)
                else {
                    continue;
                };
                let Some(committed) = record.value.as_deref().and_then(decode_offset_value) else {
                    continue;
                };
                pending.retain(|p| !p.same_partition(&group, &topic, partition));
                pending.push(PendingTxnOffset {
                    group,
                    topic,
                    partition,
                    committed,
                });
            }
        }
        Entry::Marker {
            producer_id,
            commit,
        } => {
            for p in loaded.pending.remove(&producer_id).unwrap_or_default() {
                if commit {
                    let group = loaded.groups.entry(p.group).or_default();
                    group.offsets.insert(p.topic, p.partition, p.committed);
                }
            }
        }
    })
}

fn apply(groups: &mut HashMap<String, LoadedGroup>, key: Option<&[u8]>, value: Option<&[u8]>) {
    if let Some(key) = key.and_then(consumer_records::decode_key) {
        let value = match value {
            None => None,
            Some(bytes) => match consumer_records::decode_value(key.kind, bytes) {
                Some(v) => Some(v),
                // Not a version this broker reads: leave what it had.
                None => return,
            },
        };
        let group = groups.entry(key.group.clone()).or_default();
        group.consumer.apply(&key, value);
        return;
    }
    let Some(key) = key.and_then(decode_key) else {
        return;
    };
    let group = groups.entry(key.group().to_string()).or_default();
    match key {
        RecordKey::Offset {
            topic, partition, ..
        } => match value.map(decode_offset_value) {
            Some(Some(c)) => group.offsets.insert(topic, partition, c),
            Some(None) => {}
            None => {
                group.offsets.remove(&topic, partition);
            }
        },
        RecordKey::Group { .. } => match value.map(decode_group_value) {
            Some(Some(g)) => group.metadata = Some(g),
            Some(None) => {}
            None => group.metadata = None,
        },
    }
}
