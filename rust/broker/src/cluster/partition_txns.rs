//! A partition's transactions as readers and the cleaner ask about them: the last stable
//! offset, the aborted transactions of a range, open ones (an `impl Partition` kept apart
//! from the log's write paths in `partition`).

use std::sync::atomic::Ordering;

use kafkalite_core::storage::TxnIndex;

use super::partition::Partition;

impl Partition {
    /// Offset below which every transaction is decided (Kafka's LSO): the first offset of
    /// the earliest open transaction, or the high watermark.
    #[must_use]
    pub fn last_stable_offset(&self) -> i64 {
        self.high_watermark()
            .min(self.first_unstable.load(Ordering::SeqCst))
    }

    /// Aborted transactions whose data may lie in `[from, to)`: (producer id, first offset).
    #[must_use]
    pub fn aborted_between(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        self.txns.lock().expect("lock").aborted_between(from, to)
    }

    /// The coordinator epoch of the producer's last marker here (DescribeProducers).
    #[must_use]
    pub fn coordinator_epoch(&self, producer_id: i64) -> Option<i32> {
        self.txns
            .lock()
            .expect("lock")
            .coordinator_epoch(producer_id)
    }

    /// What the cleaner needs about transactions: the aborted ones (producer id, first
    /// offset, marker offset) and the first offset of the earliest open one.
    #[must_use]
    pub fn transactions_for_cleaner(&self) -> (Vec<(i64, i64, i64)>, Option<i64>) {
        let txns = self.txns.lock().expect("lock");
        (txns.aborted_ranges(), txns.first_unstable())
    }

    /// Open transactions here: (producer id, first offset).
    #[must_use]
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        self.txns.lock().expect("lock").ongoing()
    }

    pub(super) fn set_first_unstable(&self, txns: &TxnIndex) {
        self.first_unstable
            .store(txns.first_unstable().unwrap_or(i64::MAX), Ordering::SeqCst);
    }
}
