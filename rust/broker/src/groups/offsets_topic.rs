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

/// Kafka's partition of a group: `Utils.abs(groupId.hashCode()) % partitions`, with Java's
/// String.hashCode over UTF-16 code units.
#[must_use]
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let hash = group
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions.max(1)
}

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
    partitions: Vec<Arc<Partition>>,
}

impl OffsetsTopic {
    #[must_use]
    pub fn new(partitions: Vec<Arc<Partition>>) -> OffsetsTopic {
        OffsetsTopic { partitions }
    }

    fn partition(&self, group: &str) -> &Arc<Partition> {
        let n = self.partitions.len() as i32;
        &self.partitions[partition_for(group, n) as usize]
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
        self.partition(group).append(&batch, now_ms)?;
        Ok(())
    }

    /// Read every partition from its start and rebuild each group's latest metadata and
    /// offsets (tombstones delete). Records that do not decode are skipped.
    pub fn replay(&self) -> anyhow::Result<HashMap<String, LoadedGroup>> {
        let mut groups: HashMap<String, LoadedGroup> = HashMap::new();
        for partition in &self.partitions {
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
                            apply(&mut groups, record.key.as_deref(), record.value.as_deref());
                        }
                    }
                    rest = &rest[size..];
                }
                if !advanced {
                    // Not even one whole batch: skip past it rather than loop.
                    position = position.max(slice.first_offset + 1);
                }
            }
        }
        groups.retain(|_, g| g.metadata.is_some() || !g.offsets.is_empty());
        Ok(groups)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_matches_kafka() {
        // Java: "test".hashCode() == 3556498; "my-group".hashCode() == 1376359548... checked
        // against Kafka's GroupMetadataManager.partitionFor with 50 partitions.
        assert_eq!(partition_for("test", 50), 3_556_498 % 50);
        assert_eq!(partition_for("", 50), 0);
        // A hash of i32::MIN maps to partition 0 (Kafka's Utils.abs).
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // Non-ASCII: UTF-16 code units, as Java hashes them.
        let h = "é".encode_utf16().next().unwrap() as i32;
        assert_eq!(partition_for("é", 50), h % 50);
        for g in ["a", "group-1", "ünïcode", "x".repeat(1000).as_str()] {
            assert!((0..50).contains(&partition_for(g, 50)));
        }
    }
}
