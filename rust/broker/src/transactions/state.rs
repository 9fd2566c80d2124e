//! One transactional id's state, as Kafka's `TransactionMetadata` keeps it.

use std::collections::BTreeSet;

use super::records::TxnRecord;
pub use super::status::TxnStatus;

#[derive(Clone, Debug)]
pub struct TxnMeta {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id and epoch before the last bump (a retried InitProducerId gets the
    /// current ones back instead of being fenced).
    pub last_producer_id: i64,
    pub last_epoch: i16,
    pub epoch: i16,
    pub timeout_ms: i32,
    pub status: TxnStatus,
    pub partitions: BTreeSet<(String, i32)>,
    /// Groups added with AddOffsetsToTxn (their offsets wait in the group coordinator).
    pub groups: BTreeSet<String>,
    pub start_ms: i64,
    pub last_update_ms: i64,
}

impl TxnMeta {
    #[must_use]
    pub fn record(&self) -> TxnRecord {
        TxnRecord {
            producer_id: self.producer_id,
            producer_epoch: self.epoch,
            timeout_ms: self.timeout_ms,
            status: self.status,
            partitions: self.partitions.clone(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
        }
    }

    #[must_use]
    pub fn from_record(transactional_id: &str, r: TxnRecord) -> TxnMeta {
        TxnMeta {
            transactional_id: transactional_id.to_string(),
            producer_id: r.producer_id,
            last_producer_id: -1,
            last_epoch: -1,
            epoch: r.producer_epoch,
            timeout_ms: r.timeout_ms,
            status: r.status,
            partitions: r.partitions,
            groups: BTreeSet::new(),
            start_ms: r.start_ms,
            last_update_ms: r.last_update_ms,
        }
    }
}
