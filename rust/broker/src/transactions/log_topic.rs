//! Persistence in the internal compacted topic `__transaction_state`: which partition holds
//! a transactional id (Kafka's `abs(transactionalId.hashCode) % partitions`, the same hash
//! as groups), appending its state, and replaying a partition (latest record per id wins;
//! a tombstone forgets the id). The log itself is read and written through
//! `coordinator::internal_log`, as `__consumer_offsets` is.

use std::collections::HashMap;
use std::sync::Arc;

use kafkalite_core::records::RecordInput;

use super::records::{decode_key, decode_value, encode_key, encode_value, TxnRecord};
use crate::cluster::Partition;
use crate::coordinator::internal_log::{self, Entry, Placement, Writes};
pub use crate::coordinator::runtime::partition_for;
use crate::errors::ApiError;

pub struct TxnLogTopic {
    /// The topic's id: a recreated topic is a new store.
    pub topic_id: uuid::Uuid,
    /// By index; `None` where this broker hosts no replica (cluster mode).
    partitions: Vec<Option<Arc<Partition>>>,
    placement: Placement,
    writes: Writes,
}

impl TxnLogTopic {
    #[must_use]
    pub fn new(
        topic_id: uuid::Uuid,
        partitions: Vec<Option<Arc<Partition>>>,
        placement: Placement,
        writes: Writes,
    ) -> TxnLogTopic {
        TxnLogTopic {
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

    /// Whether `partitions` are the very partitions this store writes to (a replica
    /// gained or lost here makes a new store).
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

    /// The partition holding `transactional_id`; NOT_COORDINATOR when this broker hosts no
    /// replica of it (the coordinator checks leadership first, so only a race with a move
    /// gets here).
    pub fn partition(&self, transactional_id: &str) -> Result<&Arc<Partition>, ApiError> {
        let n = self.partitions.len() as i32;
        self.partitions[partition_for(transactional_id, n) as usize]
            .as_ref()
            .ok_or_else(|| {
                ApiError::new(
                    kafkalite_core::error_codes::NOT_COORDINATOR,
                    format!(
                        "this broker hosts no replica of the partition of transactional id \
                         '{transactional_id}'"
                    ),
                )
            })
    }

    /// Write the id's state (`None`: a tombstone) to its partition.
    pub fn append(
        &self,
        transactional_id: &str,
        record: Option<&TxnRecord>,
        now_ms: i64,
        wake: &tokio::sync::Notify,
    ) -> Result<(), ApiError> {
        let record = RecordInput {
            timestamp: now_ms,
            key: Some(encode_key(transactional_id)),
            value: record.map(encode_value),
            headers: Vec::new(),
        };
        internal_log::append(
            self.partition(transactional_id)?,
            &[record],
            None,
            now_ms,
            self.placement,
            self.writes,
            true,
            wake,
        )
    }

    /// Every id's latest state, read from the start of each partition (a single node).
    pub fn replay(&self) -> anyhow::Result<HashMap<String, TxnRecord>> {
        let mut ids = HashMap::new();
        for partition in self.partitions.iter().flatten() {
            ids.extend(replay_partition(partition, self.writes.load_buffer_bytes)?);
        }
        Ok(ids)
    }
}

/// The latest state of every id stored in one partition (what a new coordinator of it
/// loads).
pub fn replay_partition(
    partition: &Partition,
    buffer_bytes: usize,
) -> anyhow::Result<HashMap<String, TxnRecord>> {
    let mut ids: HashMap<String, TxnRecord> = HashMap::new();
    internal_log::replay(partition, buffer_bytes, |entry| {
        let Entry::Records { records, .. } = entry else {
            return;
        };
        for record in records {
            let Some(id) = record.key.as_deref().and_then(decode_key) else {
                continue;
            };
            match record.value.as_deref() {
                None => {
                    ids.remove(&id);
                }
                Some(v) => {
                    if let Some(r) = decode_value(v) {
                        ids.insert(id, r);
                    }
                }
            }
        }
    })?;
    Ok(ids)
}
