//! One transactional id's state, as Kafka's `TransactionMetadata` keeps it.

use std::collections::BTreeSet;

use super::records::TxnRecord;
use crate::groups::Committed;

/// Kafka's `TransactionState` ids (the value's `transaction_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TxnStatus {
    Empty = 0,
    Ongoing = 1,
    PrepareCommit = 2,
    PrepareAbort = 3,
    CompleteCommit = 4,
    CompleteAbort = 5,
    Dead = 6,
    PrepareEpochFence = 7,
}

impl TxnStatus {
    #[must_use]
    pub fn from_i8(v: i8) -> Option<TxnStatus> {
        use TxnStatus::*;
        Some(match v {
            0 => Empty,
            1 => Ongoing,
            2 => PrepareCommit,
            3 => PrepareAbort,
            4 => CompleteCommit,
            5 => CompleteAbort,
            6 => Dead,
            7 => PrepareEpochFence,
            _ => return None,
        })
    }

    /// The names Kafka's DescribeTransactions / ListTransactions use.
    #[must_use]
    pub fn name(self) -> &'static str {
        use TxnStatus::*;
        match self {
            Empty => "Empty",
            Ongoing => "Ongoing",
            PrepareCommit => "PrepareCommit",
            PrepareAbort => "PrepareAbort",
            CompleteCommit => "CompleteCommit",
            CompleteAbort => "CompleteAbort",
            Dead => "Dead",
            PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// A transaction is being completed: requests other than a retry must wait.
    #[must_use]
    pub fn is_preparing(self) -> bool {
        matches!(
            self,
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence
        )
    }
}

/// Offsets a transaction commits for a group when it commits (TxnOffsetCommit).
#[derive(Clone, Debug)]
pub struct PendingOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub committed: Committed,
}

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
    /// Groups added with AddOffsetsToTxn and the offsets committed in this transaction.
    pub groups: BTreeSet<String>,
    pub pending_offsets: Vec<PendingOffset>,
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
            pending_offsets: Vec::new(),
            start_ms: r.start_ms,
            last_update_ms: r.last_update_ms,
        }
    }
}
