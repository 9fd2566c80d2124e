//! Persistence in the internal compacted topic `__transaction_state`: which partition holds
//! a transactional id (Kafka's `abs(transactionalId.hashCode) % partitions`, the same hash
//! as groups), appending its state, and replaying the topic at startup (latest record per
//! id wins; a tombstone forgets the id).

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use kafkalite_core::records::{
    decode_records, encode_batch, BatchHeader, Compression, RecordInput,
};

use super::records::{decode_key, decode_value, encode_key, encode_value, TxnRecord};
use crate::cluster::Partition;
use crate::errors::ApiError;
pub use crate::groups::offsets_topic::partition_for;

pub struct TxnLogTopic {
    partitions: Vec<Arc<Partition>>,
}

impl TxnLogTopic {
    #[must_use]
    pub fn new(partitions: Vec<Arc<Partition>>) -> TxnLogTopic {
        TxnLogTopic { partitions }
    }

    /// Write the id's state (`None`: a tombstone) to its partition.
    pub fn append(
        &self,
        transactional_id: &str,
        record: Option<&TxnRecord>,
        now_ms: i64,
    ) -> Result<(), ApiError> {
        let n = self.partitions.len() as i32;
        let partition = &self.partitions[partition_for(transactional_id, n) as usize];
        let batch = encode_batch(
            &[RecordInput {
                timestamp: now_ms,
                key: Some(encode_key(transactional_id)),
                value: record.map(encode_value),
                headers: Vec::new(),
            }],
            Compression::None,
            0,
        )?;
        partition.append(&batch, now_ms)?;
        Ok(())
    }

    /// Every id's latest state, read from the start of each partition.
    pub fn replay(&self) -> anyhow::Result<HashMap<String, TxnRecord>> {
        let mut ids: HashMap<String, TxnRecord> = HashMap::new();
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
                    }
                    rest = &rest[size..];
                }
                if !advanced {
                    position = position.max(slice.first_offset + 1);
                }
            }
        }
        Ok(ids)
    }
}
