//! Persistence in the internal compacted topic `__consumer_offsets`: which partition holds a
//! group (Kafka's `abs(groupId.hashCode) % partitions`), appending its records, and
//! replaying the topic at startup.
//!
//! Every record is keyed (by group, topic and partition for offsets; by group for its
//! metadata), so compaction keeps exactly the latest state; a null value deletes.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use kafkalite_core::records::{
    decode_records, encode_batch, BatchHeader, Compression, RecordInput,
};

use super::offsets::{Committed, Offsets};
use super::records::{
    decode_group_value, decode_key, decode_offset_value, encode_group_key, encode_group_value,
    encode_offset_key, encode_offset_value, GroupRecord, RecordKey,
};
use crate::cluster::Partition;
use crate::errors::ApiError;

/// Kafka's partition of a group (the placement every partitioned coordinator shares).
pub use crate::cluster::coordination::partition_for;

/// One record to write for a group.
pub enum Write<'a> {
    Offset(&'a str, i32, Option<&'a Committed>),
    Group(Option<&'a GroupRecord>),
}

/// What replay found for one group.
#[derive(Default)]
pub struct LoadedGroup {
    pub metadata: Option<GroupRecord>,
    pub offsets: Offsets,
}

pub struct OffsetsTopic {
    /// The topic's id: a recreated topic is a new store.
    pub topic_id: uuid::Uuid,
    /// By index; `None` where this broker hosts no replica (cluster mode).
    partitions: Vec<Option<Arc<Partition>>>,
}

impl OffsetsTopic {
    #[must_use]
    pub fn new(topic_id: uuid::Uuid, partitions: Vec<Option<Arc<Partition>>>) -> OffsetsTopic {
        OffsetsTopic {
            topic_id,
            partitions,
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
        let n = self.partitions.len() as i32;
        self.partitions[partition_for(group, n) as usize]
            .as_ref()
            .ok_or_else(|| {
                ApiError::new(
                    crate::errors::codes::NOT_COORDINATOR,
                    format!("this broker hosts no replica of the partition of group '{group}'"),
                )
            })
    }

    /// Append a group's records as one batch to its partition; all or nothing.
    pub fn append(&self, group: &str, writes: &[Write], now_ms: i64) -> Result<(), ApiError> {
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
                };
                RecordInput {
                    timestamp: now_ms,
                    key: Some(key),
                    value,
                    headers: Vec::new(),
                }
            })
            .collect();
        let batch = encode_batch(&records, Compression::None, 0)?;
        // Replayed up to the log end, not the high watermark, so a commit counts once the
        // leader has it. With followers (issue 13), Kafka also waits for the ISR (acks=all).
        self.partition(group)?.append(&batch, now_ms)?;
        Ok(())
    }

    /// Read every partition from its start and rebuild each group's latest metadata and
    /// offsets (tombstones delete). Records that do not decode are skipped.
    pub fn replay(&self) -> anyhow::Result<HashMap<String, LoadedGroup>> {
        let mut groups: HashMap<String, LoadedGroup> = HashMap::new();
        for partition in self.partitions.iter().flatten() {
            replay_into(partition, &mut groups)?;
        }
        groups.retain(|_, g| g.metadata.is_some() || !g.offsets.is_empty());
        Ok(groups)
    }
}

/// Rebuild the groups stored in one partition (what a new coordinator of it loads).
pub fn replay_partition(partition: &Partition) -> anyhow::Result<HashMap<String, LoadedGroup>> {
    let mut groups: HashMap<String, LoadedGroup> = HashMap::new();
    replay_into(partition, &mut groups)?;
    groups.retain(|_, g| g.metadata.is_some() || !g.offsets.is_empty());
    Ok(groups)
}

fn replay_into(
    partition: &Partition,
    groups: &mut HashMap<String, LoadedGroup>,
) -> anyhow::Result<()> {
    let log = partition.log.lock().expect("lock");
    let mut position = log.log_start_offset();
    while let Some(slice) = log.read(position, 4 << 20, None)? {
        let mut buf = vec![0u8; slice.len as usize];
        slice.file.read_exact_at(&mut buf, slice.position)?;
        let mut rest = &buf[..];
        let mut advanced = false;
        while let Ok(header) = BatchHeader::parse(rest) {
            let size = header.total_size();
            if size > rest.len() {
                break;
            }
            position = position.max(header.last_offset() + 1);
            advanced = true;
            if !header.is_control() {
                for record in decode_records(&rest[..size]).unwrap_or_default() {
                    apply(groups, record.key.as_deref(), record.value.as_deref());
                }
            }
            rest = &rest[size..];
        }
        if !advanced {
            // Not even one whole batch: skip past it rather than loop.
            position = position.max(slice.first_offset + 1);
        }
    }
    Ok(())
}

fn apply(groups: &mut HashMap<String, LoadedGroup>, key: Option<&[u8]>, value: Option<&[u8]>) {
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
