//! One partition replica on this broker: its log, its idempotent producers, its
//! leader-epoch cache and its replica state (leader, epoch, replicas, ISR, high watermark).
//!
//! The high watermark is kept apart from the log end offset: consumers never read past
//! it. While the partition has a single replica (this node, alone in the ISR) every
//! appended batch is committed at once, so the high watermark follows the log end after
//! each append; with followers, replication will advance it as the ISR catches up.
//!
//! The leader epoch is recorded in the leader-epoch cache at the first append of each
//! epoch (Kafka's `UnifiedLog.maybeAssignEpochStartOffset`); the single node leads in
//! epoch 0 forever.
//!
//! With followers (cluster mode, `replication`), the leader stamps its epoch in every
//! batch it appends, learns its followers' log ends from their fetches (`progress`) and
//! moves the high watermark to the smallest log end over the ISR; a follower appends the
//! leader's batches as they are and takes the leader's high watermark. Every move of the
//! high watermark, and every new replica state, wakes `hw_moved` (acks=all waiters).
//!
//! Locking: `producers` before `log` before the epoch cache and `progress`, each held only
//! for one operation and never across an await. The high watermark only changes under
//! `log`, so a reader holding `log` sees a high watermark consistent with the log end.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, RwLock};

use kafkalite_core::records::BatchHeader;
use kafkalite_core::storage::clock::monotonic_ms;
use kafkalite_core::storage::txn_index::{self, marker_batch};
use kafkalite_core::storage::{
    AppendInfo, LeaderEpochCache, LogConfig, PartitionLog, ProducerStateTable, TxnIndex,
};
use tokio::sync::Notify;

use super::replica_progress::ReplicaProgress;

/// Who leads a partition and who follows: what a controller decides (DESIGN.md: "partition
/// P: leader L, epoch E, replicas R, ISR I").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

impl ReplicaState {
    /// A single node leads every partition, in epoch 0, with itself as the only replica.
    #[must_use]
    pub fn single_node(node_id: i32) -> ReplicaState {
        ReplicaState {
            leader: node_id,
            leader_epoch: 0,
            replicas: vec![node_id],
            isr: vec![node_id],
        }
    }

    /// The leader is the only replica, so whatever it appends is committed.
    #[must_use]
    pub fn is_sole_replica(&self) -> bool {
        self.replicas == [self.leader] && self.isr == [self.leader]
    }
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    /// The partition dir; changes only when `replica_move` moves it to another log dir,
    /// under `log`.
    pub(super) dir: RwLock<PathBuf>,
    pub log: Mutex<PartitionLog>,
    pub producers: Mutex<ProducerStateTable>,
    pub(super) epochs: Mutex<LeaderEpochCache>,
    replica: RwLock<ReplicaState>,
    high_watermark: AtomicI64,
    /// The leader's view of its followers (cluster mode).
    pub progress: Mutex<ReplicaProgress>,
    /// Woken when the high watermark moves or the replica state changes.
    pub hw_moved: Notify,
    /// Open transactions and the aborted ones (`.txnindex`); changed under `log`.
    pub(super) txns: Mutex<TxnIndex>,
    /// First offset of the earliest open transaction (`i64::MAX`: none); set under `log`
    /// before the high watermark moves, so the LSO never runs ahead of it.
    pub(super) first_unstable: AtomicI64,
}

impl Partition {
    /// Open (recovering where needed) the log in `dir`, replay its producers and load its
    /// leader-epoch cache, dropping epochs outside the log as Kafka's loader does.
    pub fn open(
        topic: &str,
        index: i32,
        dir: PathBuf,
        config: LogConfig,
        replica: ReplicaState,
    ) -> kafkalite_core::Result<Partition> {
        let log = PartitionLog::open(&dir, config)?;
        let producers = ProducerStateTable::rebuild(&log);
        let txns = TxnIndex::open(&log)?;
        let first_unstable = txns.first_unstable().unwrap_or(i64::MAX);
        let mut epochs = LeaderEpochCache::open(&dir)?;
        epochs.truncate_from_end(log.log_end_offset())?;
        epochs.truncate_from_start(log.log_start_offset())?;
        // Without a checkpoint of it, a replicated partition starts from what it knows is
        // committed everywhere: nothing above the log start; a sole replica, all of it.
        let high_watermark = if replica.is_sole_replica() {
            log.log_end_offset()
        } else {
            log.log_start_offset()
        };
        let mut progress = ReplicaProgress::default();
        let followers: Vec<i32> = replica
            .replicas
            .iter()
            .copied()
            .filter(|&r| r != replica.leader)
            .collect();
        progress.become_leader(&followers, log.log_end_offset(), monotonic_ms());
        Ok(Partition {
            topic: topic.to_string(),
            index,
            dir: RwLock::new(dir),
            log: Mutex::new(log),
            producers: Mutex::new(producers),
            epochs: Mutex::new(epochs),
            replica: RwLock::new(replica),
            high_watermark: AtomicI64::new(high_watermark),
            progress: Mutex::new(progress),
            hw_moved: Notify::new(),
            txns: Mutex::new(txns),
            first_unstable: AtomicI64::new(first_unstable),
        })
    }

    /// Append one validated batch as the leader: the log assigns offsets, the epoch cache
    /// learns where the current epoch starts (first append of the epoch), and the high
    /// watermark advances if this node is the only replica.
    pub fn append(&self, records: &[u8], now_ms: i64) -> kafkalite_core::Result<AppendInfo> {
        self.append_in_epoch(records, now_ms, false)
    }

    /// `append`, stamping the leader epoch in each batch when `stamp` (a replicated
    /// partition's leader: followers and OffsetForLeaderEpoch rely on it).
    pub fn append_in_epoch(
        &self,
        records: &[u8],
        now_ms: i64,
        stamp: bool,
    ) -> kafkalite_core::Result<AppendInfo> {
        let mut log = self.log.lock().expect("lock");
        let epoch = self.leader_epoch();
        let info = log.append_shared_in_epoch(records, now_ms, stamp.then_some(epoch))?;
        if let Ok(h) = BatchHeader::parse(records) {
            if h.is_transactional() && !h.is_control() {
                let mut txns = self.txns.lock().expect("lock");
                txns.on_data(h.producer_id, info.first_offset);
                self.set_first_unstable(&txns);
            }
        }
        {
            let mut epochs = self.epochs.lock().expect("lock");
            if epochs.latest_epoch() != Some(epoch) {
                epochs.assign(epoch, info.first_offset)?;
            }
        }
        self.maybe_advance_high_watermark(&log);
        Ok(info)
    }

    /// Write a COMMIT or ABORT marker for `producer_id`'s transaction (the coordinator's
    /// WriteTxnMarkers). Takes `producers` itself, so a marker never slips between a
    /// producer's verified batch and its append. Returns the marker's offset.
    ///
    /// The producer epoch check follows the marker's transaction version (WriteTxnMarkers
    /// v2, KIP-1228), as Kafka 4.4's: before 2 an epoch older than the partition's is
    /// INVALID_PRODUCER_EPOCH; from 2 (the coordinator bumps the epoch as it ends each
    /// transaction) the epoch must also be newer than the partition's, but for a retry of a
    /// marker already written (the same epoch with no transaction of the producer open
    /// here, or the epoch at its maximum).
    pub fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        transaction_version: i8,
        now_ms: i64,
    ) -> kafkalite_core::Result<i64> {
        let batch = marker_batch(
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            now_ms,
        )?;
        let mut producers = self.producers.lock().expect("lock");
        if self
            .coordinator_epoch(producer_id)
            .is_some_and(|known| coordinator_epoch < known)
        {
            return Err(kafkalite_core::Error::CoordinatorFenced(format!(
                "marker of coordinator epoch {coordinator_epoch} for producer {producer_id} is older than the last one"
            )));
        }
        if let Some(current) = producers.get(producer_id).map(|e| e.epoch) {
            let stale = if transaction_version >= 2 {
                let open = || {
                    self.ongoing_transactions()
                        .iter()
                        .any(|(id, _)| *id == producer_id)
                };
                producer_epoch < current
                    || (producer_epoch == current && producer_epoch != i16::MAX && open())
            } else {
                producer_epoch < current
            };
            if stale {
                let than = if transaction_version >= 2 {
                    "not newer than"
                } else {
                    "older than"
                };
                return Err(kafkalite_core::Error::InvalidProducerEpoch(format!(
                    "marker epoch {producer_epoch} of producer {producer_id} is {than} the partition's ({current})"
                )));
            }
        }
        let mut log = self.log.lock().expect("lock");
        // Stamped like a leader's data batch: followers' epoch caches learn from it.
        let info = log.append_shared_in_epoch(&batch, now_ms, Some(self.leader_epoch()))?;
        let segment = log
            .segment_base_offsets()
            .last()
            .copied()
            .unwrap_or(info.first_offset);
        {
            let mut txns = self.txns.lock().expect("lock");
            txns.on_marker(producer_id, info.first_offset, !commit, segment)?;
            txns.note_coordinator_epoch(producer_id, coordinator_epoch);
            self.set_first_unstable(&txns);
        }
        producers.on_marker(producer_id, producer_epoch, now_ms);
        let epoch = self.leader_epoch();
        {
            let mut epochs = self.epochs.lock().expect("lock");
            if epochs.latest_epoch() != Some(epoch) {
                epochs.assign(epoch, info.first_offset)?;
            }
        }
        self.maybe_advance_high_watermark(&log);
        Ok(info.first_offset)
    }

    /// Delete what retention no longer keeps; epochs before the new log start go with it.
    pub fn apply_retention(&self, now_ms: i64) -> kafkalite_core::Result<usize> {
        let mut log = self.log.lock().expect("lock");
        let deleted = log.apply_retention(now_ms, self.high_watermark.load(Ordering::SeqCst))?;
        let start = log.log_start_offset();
        if deleted > 0 {
            self.txns
                .lock()
                .expect("lock")
                .retain_segments(&log.segment_base_offsets())?;
        }
        self.epochs
            .lock()
            .expect("lock")
            .truncate_from_start(start)?;
        self.high_watermark.fetch_max(start, Ordering::SeqCst);
        Ok(deleted)
    }

    /// Cut the log back to `offset` (a follower diverging from its leader): epochs that
    /// started there or later, the producers' history and the high watermark follow.
    pub fn truncate_to(&self, offset: i64) -> kafkalite_core::Result<()> {
        let mut log = self.log.lock().expect("lock");
        log.truncate_to(offset)?;
        let end = log.log_end_offset();
        self.epochs.lock().expect("lock").truncate_from_end(end)?;
        // Idempotence state comes from the log that is left (headers only).
        *self.producers.lock().expect("lock") = ProducerStateTable::rebuild(&log);
        {
            let mut txns = self.txns.lock().expect("lock");
            txns.truncate_to(end)?;
            self.set_first_unstable(&txns);
        }
        self.high_watermark.fetch_min(end, Ordering::SeqCst);
        Ok(())
    }

    /// Drop the whole log and continue at `offset` (a follower far behind a leader whose
    /// log now starts later).
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> kafkalite_core::Result<()> {
        let mut log = self.log.lock().expect("lock");
        log.truncate_fully_and_start_at(offset)?;
        self.epochs.lock().expect("lock").clear()?;
        self.producers.lock().expect("lock").clear();
        self.high_watermark.store(offset, Ordering::SeqCst);
        Ok(())
    }

    /// Append the leader's batches as they are (a follower): offsets and epochs are the
    /// leader's; the epoch cache and the producers learn from each batch header (no
    /// per-record work), so idempotence state travels with the log.
    pub fn append_as_follower(
        &self,
        records: &[u8],
        now_ms: i64,
    ) -> kafkalite_core::Result<AppendInfo> {
        let mut producers = self.producers.lock().expect("lock");
        let mut log = self.log.lock().expect("lock");
        let info = log.append_as_follower(records, now_ms)?;
        let mut epochs = self.epochs.lock().expect("lock");
        let mut position = 0usize;
        while position < records.len() {
            let header = BatchHeader::parse(&records[position..])?;
            let epoch = header.partition_leader_epoch;
            if epoch >= 0 && epochs.latest_epoch().is_none_or(|latest| epoch > latest) {
                epochs.assign(epoch, header.base_offset)?;
            }
            producers.record(
                &header,
                header.base_offset,
                header.last_offset(),
                -1,
                now_ms,
            );
            // Open and aborted transactions travel with the log too, so a follower that
            // becomes leader knows its last stable offset and what read_committed skips.
            if header.is_transactional() {
                let mut txns = self.txns.lock().expect("lock");
                if header.is_control() {
                    let batch = &records[position..position + header.total_size()];
                    let kind = txn_index::control_type(batch);
                    if matches!(
                        kind,
                        Some(txn_index::CONTROL_ABORT | txn_index::CONTROL_COMMIT)
                    ) {
                        let segment = log
                            .segment_base_offsets()
                            .into_iter()
                            .filter(|base| *base <= header.base_offset)
                            .max()
                            .unwrap_or(header.base_offset);
                        let abort = kind == Some(txn_index::CONTROL_ABORT);
                        txns.on_marker(header.producer_id, header.base_offset, abort, segment)?;
                        producers.on_marker(header.producer_id, header.producer_epoch, now_ms);
                    }
                } else {
                    txns.on_data(header.producer_id, header.base_offset);
                }
                self.set_first_unstable(&txns);
            }
            position += header.total_size();
        }
        Ok(info)
    }

    /// A follower takes the leader's high watermark, never past its own log end. True
    /// when it moved (consumers reading from this follower, KIP-392, may read more).
    pub fn follow_high_watermark(&self, leader_hw: i64) -> bool {
        let log = self.log.lock().expect("lock");
        let hw = leader_hw.min(log.log_end_offset());
        let moved = self.high_watermark.fetch_max(hw, Ordering::SeqCst) < hw;
        if moved {
            self.hw_moved.notify_waiters();
        }
        moved
    }

    /// As leader: move the high watermark to the smallest log end over the ISR. True when
    /// it moved (the caller wakes long-polling consumers).
    pub fn advance_leader_high_watermark(&self) -> bool {
        let log = self.log.lock().expect("lock");
        let end = log.log_end_offset();
        let replica = self.replica.read().expect("lock").clone();
        let hw = if replica.is_sole_replica() {
            Some(end)
        } else {
            self.progress.lock().expect("lock").isr_high_watermark(
                replica.leader,
                &replica.isr,
                end,
            )
        };
        let Some(hw) = hw else { return false };
        let moved = self.high_watermark.fetch_max(hw, Ordering::SeqCst) < hw;
        drop(log);
        if moved {
            self.hw_moved.notify_waiters();
        }
        moved
    }

    #[must_use]
    pub fn log_end_offset(&self) -> i64 {
        self.log.lock().expect("lock").log_end_offset()
    }

    /// The partition dir (`<log dir>/<topic>-<index>`).
    #[must_use]
    pub fn dir(&self) -> PathBuf {
        self.dir.read().expect("lock").clone()
    }

    /// The latest epoch in the leader-epoch cache (what a follower asks its leader about).
    #[must_use]
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.lock().expect("lock").latest_epoch()
    }

    /// Take a new leader, epoch, replica set or ISR (from the controller, or the single
    /// node's file store at open). The new epoch is recorded at its first append.
    pub fn set_replica_state(&self, state: ReplicaState) {
        let log = self.log.lock().expect("lock");
        {
            let mut replica = self.replica.write().expect("lock");
            let mut progress = self.progress.lock().expect("lock");
            let followers: Vec<i32> = state
                .replicas
                .iter()
                .copied()
                .filter(|&r| r != state.leader)
                .collect();
            if replica.leader != state.leader || replica.leader_epoch != state.leader_epoch {
                // A new term: what followers had fetched from the old one says nothing.
                progress.become_leader(&followers, log.log_end_offset(), monotonic_ms());
            } else if replica.replicas != state.replicas {
                progress.track(&followers, monotonic_ms());
            }
            progress.isr_changed(&replica.isr, &state.isr);
            *replica = state;
        }
        self.maybe_advance_high_watermark(&log);
        drop(log);
        self.hw_moved.notify_waiters();
    }

    /// Offset up to which records are committed and visible to consumers.
    #[must_use]
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::SeqCst)
    }

    #[must_use]
    pub fn leader_epoch(&self) -> i32 {
        self.replica.read().expect("lock").leader_epoch
    }

    #[must_use]
    pub fn replica_state(&self) -> ReplicaState {
        self.replica.read().expect("lock").clone()
    }

    /// OffsetForLeaderEpoch for this partition: (epoch, end offset) as Kafka answers it.
    /// Kafka records a leader's epoch when it takes leadership; here the cache learns it
    /// at the first append, so an epoch not yet appended in is answered as if it started
    /// at the log end (what Kafka's cache would hold).
    #[must_use]
    pub fn end_offset_for(&self, epoch: i32) -> (i32, i64) {
        let end = self.log.lock().expect("lock").log_end_offset();
        let current = self.leader_epoch();
        let epochs = self.epochs.lock().expect("lock");
        let latest = epochs.latest_epoch();
        if epoch >= 0 && epoch <= current && latest.is_none_or(|l| l < current) {
            match latest {
                _ if epoch == current => return (current, end),
                Some(l) if epoch >= l => return (l, end),
                None => return (epoch, end),
                Some(_) => {}
            }
        }
        epochs.end_offset_for(epoch, end)
    }

    /// The caller holds `log`, so the high watermark never passes the log end it sees.
    fn maybe_advance_high_watermark(&self, log: &PartitionLog) {
        if self.replica.read().expect("lock").is_sole_replica() {
            self.high_watermark
                .fetch_max(log.log_end_offset(), Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use kafkalite_core::records::{encode_batch, Compression, RecordInput};
    use kafkalite_core::storage::leader_epoch_cache::CHECKPOINT_FILE;

    use super::*;

    fn batch(n: usize) -> Vec<u8> {
        let records: Vec<RecordInput> = (0..n)
            .map(|i| RecordInput {
                timestamp: 1_000,
                key: Some(vec![b'k']),
                value: Some(vec![i as u8; 16]),
                headers: Vec::new(),
            })
            .collect();
        encode_batch(&records, Compression::None, 0).unwrap()
    }

    fn open(dir: &std::path::Path, replica: ReplicaState) -> Partition {
        Partition::open("t", 0, dir.to_path_buf(), LogConfig::default(), replica).unwrap()
    }

    #[test]
    fn a_transaction_version_2_marker_needs_a_newer_epoch_but_for_a_retry() {
        use kafkalite_core::storage::txn_index::transactional_batch;
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path(), ReplicaState::single_node(1));
        let invalid = |r: kafkalite_core::Result<i64>| {
            matches!(r, Err(kafkalite_core::Error::InvalidProducerEpoch(_)))
        };
        // A legacy marker at epoch 5, then a transaction of epoch 5 left open.
        p.append_marker(7, 5, true, 0, 0, 1_000).unwrap();
        let records = [RecordInput {
            timestamp: 1_000,
            key: None,
            value: Some(vec![1]),
            headers: Vec::new(),
        }];
        let data = transactional_batch(&records, 7, 5, Compression::None).unwrap();
        p.append(&data, 1_000).unwrap();
        assert_eq!(p.ongoing_transactions().len(), 1);
        // Transaction version 2: the coordinator bumped the epoch as it ended the
        // transaction, so the same epoch with the transaction open is refused...
        assert!(invalid(p.append_marker(7, 5, false, 0, 2, 1_000)));
        assert!(invalid(p.append_marker(7, 4, false, 0, 2, 1_000)));
        // ... while a legacy marker at the same epoch ends it.
        p.append_marker(7, 5, false, 0, 0, 1_000).unwrap();
        // A retry of a written marker (no transaction open) is written again.
        p.append_marker(7, 6, true, 0, 2, 1_000).unwrap();
        p.append_marker(7, 6, true, 0, 2, 1_000).unwrap();
        assert!(invalid(p.append_marker(7, 5, true, 0, 2, 1_000)));
        assert!(invalid(p.append_marker(7, 5, true, 0, 0, 1_000)));
        assert!(p.ongoing_transactions().is_empty());
    }

    #[test]
    fn sole_replica_high_watermark_follows_log_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path(), ReplicaState::single_node(1));
        assert_eq!(p.high_watermark(), 0);
        let info = p.append(&batch(3), 0).unwrap();
        assert_eq!((info.first_offset, info.last_offset), (0, 2));
        assert_eq!(p.high_watermark(), 3);
        p.append(&batch(2), 0).unwrap();
        assert_eq!(p.high_watermark(), 5);
        assert_eq!(p.log.lock().unwrap().log_end_offset(), 5);
        // Reopened, a sole replica's whole log is committed.
        p.log.lock().unwrap().close().unwrap();
        drop(p);
        assert_eq!(
            open(dir.path(), ReplicaState::single_node(1)).high_watermark(),
            5
        );
    }

    #[test]
    fn high_watermark_stays_apart_from_log_end_with_followers() {
        let dir = tempfile::tempdir().unwrap();
        let replicated = ReplicaState {
            leader: 1,
            leader_epoch: 4,
            replicas: vec![1, 2],
            isr: vec![1, 2],
        };
        let p = open(dir.path(), replicated);
        p.append(&batch(1), 0).unwrap();
        p.append(&batch(2), 0).unwrap();
        assert_eq!(p.log.lock().unwrap().log_end_offset(), 3);
        assert_eq!(
            p.high_watermark(),
            0,
            "followers have not confirmed anything"
        );
        // The follower leaves the ISR and the replica set: the leader alone commits.
        p.set_replica_state(ReplicaState {
            leader: 1,
            leader_epoch: 5,
            replicas: vec![1],
            isr: vec![1],
        });
        assert_eq!(p.high_watermark(), 3);
        // Truncation (at a batch boundary) pulls the high watermark back with the log end.
        p.truncate_to(1).unwrap();
        assert_eq!(p.log.lock().unwrap().log_end_offset(), 1);
        assert_eq!(p.high_watermark(), 1);
    }

    #[test]
    fn first_append_of_an_epoch_is_checkpointed() {
        let dir = tempfile::tempdir().unwrap();
        let checkpoint = dir.path().join(CHECKPOINT_FILE);
        let p = open(dir.path(), ReplicaState::single_node(0));
        assert!(!checkpoint.exists(), "nothing appended yet");
        p.append(&batch(2), 0).unwrap();
        p.append(&batch(2), 0).unwrap();
        assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
        assert_eq!(p.end_offset_for(0), (0, 4));
        p.set_replica_state(ReplicaState {
            leader_epoch: 1,
            ..ReplicaState::single_node(0)
        });
        p.append(&batch(1), 0).unwrap();
        assert_eq!(
            std::fs::read_to_string(&checkpoint).unwrap(),
            "0\n2\n0 0\n1 4\n"
        );
        assert_eq!(p.end_offset_for(0), (0, 4));
        // Truncating below epoch 1's start forgets it, in the file too.
        p.truncate_to(3).unwrap();
        assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
    }

    #[test]
    fn open_drops_epochs_beyond_the_log() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CHECKPOINT_FILE), "0\n2\n0 0\n3 100\n").unwrap();
        // The log is empty: every epoch starts at or past its end.
        let p = open(dir.path(), ReplicaState::single_node(0));
        assert_eq!(
            std::fs::read_to_string(dir.path().join(CHECKPOINT_FILE)).unwrap(),
            "0\n0\n"
        );
        // Nothing in the cache; the leader's own epoch starts at the (empty) log end.
        assert_eq!(p.end_offset_for(0), (0, 0));
        assert_eq!(p.end_offset_for(1), (-1, -1));
    }
}
