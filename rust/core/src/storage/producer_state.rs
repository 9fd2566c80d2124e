//! Idempotent producer state per partition: for each producer id, its epoch and the last
//! batches' sequence numbers and offsets, so a retried batch is acknowledged with its
//! original offsets instead of being appended twice. Rebuilt from the log on open.
//!
//! The rules are Kafka's (`ProducerStateManager` / `ProducerAppendInfo`):
//! - producer id -1: not idempotent, no checks;
//! - epoch below the known one: INVALID_PRODUCER_EPOCH (47), as Kafka answers Produce since
//!   2.7 (PRODUCER_FENCED is only for the transaction coordinator's APIs);
//! - same epoch: a batch whose (first, last) sequence matches one of the last 5 appended is a
//!   duplicate, acknowledged with the original offsets and not appended; otherwise the first
//!   sequence must follow the last one (int32 sequences wrap from `i32::MAX` to 0), else
//!   OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//! - newer epoch: the first sequence must be 0, else 45;
//! - unknown producer id: any sequence is accepted and tracking starts (Kafka 2.5+, where
//!   state lost to retention no longer fails the producer with UNKNOWN_PRODUCER_ID).
//!
//! The caller (the broker's `Partition`) holds the producer table's lock across check,
//! append and record, so the decision and the append are atomic per partition. Failures
//! are the core's `Error::InvalidProducerEpoch` / `Error::OutOfOrderSequence`, which carry
//! their Kafka codes (`kafka_code`).
//!
//! Producers idle for longer than the broker's `producer.id.expiration.ms` (one day by
//! default; `set_expiration_ms`) and not in a transaction are forgotten, as Kafka's
//! `ProducerStateManager.removeExpiredProducers` does, so short-lived producers do not
//! accumulate: an expired producer is unknown to `check` at once (its next batch starts it
//! afresh), and swept from the table as it grows, or by `expire` (before it is listed).
//!
//! Recovery: there are no producer snapshots. `rebuild` replays batch headers from the tail
//! of the log: the active segment and anything appended in the last
//! `REBUILD_WINDOW_MS` (by the time index), but never more than the last two segments. A
//! retry after a restart concerns a batch appended just before it, which lies in that tail;
//! producers last seen earlier come back as unknown producers (accepted, tracked again).

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};
use crate::records::{BatchHeader, BATCH_HEADER_LEN};
use crate::storage::log::PartitionLog;

/// Kafka keeps the metadata of this many recent batches per producer (the producer's
/// `max.in.flight.requests.per.connection` may not exceed it with idempotence on).
pub const MAX_CACHED_BATCHES: usize = 5;
/// Kafka's `producer.id.expiration.ms` default, until `set_expiration_ms` says otherwise.
pub const PRODUCER_ID_EXPIRATION_MS: i64 = 24 * 3600 * 1000;
/// How far back (by record timestamp) `rebuild` replays at least, beyond the active segment.
pub const REBUILD_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Bytes read per pread while walking batch headers during `rebuild`.
const SCAN_CHUNK: usize = 64 * 1024;

/// One appended batch as the duplicate check remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// LogAppendTime given to the batch, or -1 for CreateTime topics.
    pub log_append_time: i64,
}

#[derive(Clone, Debug)]
pub struct ProducerEntry {
    pub epoch: i16,
    /// Oldest first; at most `MAX_CACHED_BATCHES`.
    pub batches: VecDeque<BatchMetadata>,
    /// Broker wall clock of the last append (for expiration).
    pub last_seen_ms: i64,
    /// A transactional batch came and no marker since: never expired meanwhile.
    pub in_transaction: bool,
}

impl ProducerEntry {
    #[must_use]
    pub fn last_seq(&self) -> Option<i32> {
        self.batches.back().map(|b| b.last_seq)
    }
}

/// What to do with an idempotent batch that passed the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Append it (then `record` it).
    Append,
    /// Already in the log: acknowledge with these offsets, append nothing.
    Duplicate(BatchMetadata),
}

/// Sequence number of the batch's last record: base + last offset delta, wrapping from
/// `i32::MAX` to 0 as Kafka's `DefaultRecordBatch.incrementSequence` does.
#[must_use]
pub fn last_sequence(base_sequence: i32, last_offset_delta: i32) -> i32 {
    let modulus = i64::from(i32::MAX) + 1;
    ((i64::from(base_sequence) + i64::from(last_offset_delta.max(0))).rem_euclid(modulus)) as i32
}

/// Does `next` directly follow `last`?
#[must_use]
pub fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

#[derive(Debug)]
pub struct ProducerStateTable {
    producers: HashMap<i64, ProducerEntry>,
    /// Sweep expired producers when the table reaches this many entries.
    sweep_at: usize,
    /// `producer.id.expiration.ms`.
    expiration_ms: i64,
}

impl Default for ProducerStateTable {
    fn default() -> Self {
        ProducerStateTable {
            producers: HashMap::new(),
            sweep_at: 0,
            expiration_ms: PRODUCER_ID_EXPIRATION_MS,
        }
    }
}

const MIN_SWEEP_AT: usize = 1024;

impl ProducerStateTable {
    /// Replay the tail of the log's batch headers to recover producer state after a restart
    /// (see the module docs for how far back). Unreadable data ends the replay early: the
    /// state is an optimisation for retries, never a reason to refuse to open a partition.
    #[must_use]
    pub fn rebuild(log: &PartitionLog) -> ProducerStateTable {
        let mut table = ProducerStateTable::default();
        let now = crate::storage::clock::now_ms();
        let start = rebuild_start(log, now);
        let append_time = log.config().log_append_time;
        let _ = replay_headers(log, start, |h| {
            if h.producer_id < 0 {
                return;
            }
            if h.is_control() {
                table.on_marker(h.producer_id, h.producer_epoch, now);
                return;
            }
            let ts = if append_time { h.max_timestamp } else { -1 };
            table.record(h, h.base_offset, h.last_offset(), ts, now);
        });
        table
    }

    /// The broker's `producer.id.expiration.ms` (it may change while the broker runs).
    pub fn set_expiration_ms(&mut self, ms: i64) {
        self.expiration_ms = ms;
    }

    fn expired(&self, entry: &ProducerEntry, now_ms: i64) -> bool {
        !entry.in_transaction && now_ms.saturating_sub(entry.last_seen_ms) > self.expiration_ms
    }

    /// Check an incoming batch against the producer's state at `now_ms`. Batches without a
    /// producer id, and those of unknown or expired producers, are always `Append`.
    pub fn check(&self, h: &BatchHeader, now_ms: i64) -> Result<Verdict> {
        if h.producer_id < 0 {
            return Ok(Verdict::Append);
        }
        let Some(entry) = self.live(h.producer_id, now_ms) else {
            return Ok(Verdict::Append);
        };
        let first_seq = h.base_sequence;
        let last_seq = last_sequence(first_seq, h.last_offset_delta);
        if h.producer_epoch < entry.epoch {
            return Err(Error::InvalidProducerEpoch(format!(
                "epoch {} of producer {} is older than the last seen epoch {}",
                h.producer_epoch, h.producer_id, entry.epoch
            )));
        }
        if h.producer_epoch > entry.epoch {
            if first_seq != 0 && entry.epoch >= 0 {
                return Err(Error::OutOfOrderSequence(format!(
                    "new epoch {} of producer {} must start at sequence 0, got {first_seq}",
                    h.producer_epoch, h.producer_id
                )));
            }
            return Ok(Verdict::Append);
        }
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
        {
            return Ok(Verdict::Duplicate(*dup));
        }
        match entry.last_seq() {
            Some(last) if !in_sequence(last, first_seq) => Err(Error::OutOfOrderSequence(format!(
                "out of order sequence for producer {} epoch {}: expected {}, got {first_seq}",
                h.producer_id,
                h.producer_epoch,
                if last == i32::MAX { 0 } else { last + 1 }
            ))),
            _ => Ok(Verdict::Append),
        }
    }

    /// Remember an appended batch (`first_offset..=last_offset` in the log). A newer epoch
    /// replaces the producer's batch history.
    pub fn record(
        &mut self,
        h: &BatchHeader,
        first_offset: i64,
        last_offset: i64,
        log_append_time: i64,
        now_ms: i64,
    ) {
        if h.producer_id < 0 {
            return;
        }
        if self.live(h.producer_id, now_ms).is_none() {
            // Unknown, or expired: starts afresh.
            self.producers.remove(&h.producer_id);
            if self.producers.len() >= self.sweep_at.max(MIN_SWEEP_AT) {
                self.expire(now_ms);
                self.sweep_at = (self.producers.len() * 2).max(MIN_SWEEP_AT);
            }
        }
        let entry = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: h.producer_epoch,
                batches: VecDeque::with_capacity(MAX_CACHED_BATCHES),
                last_seen_ms: now_ms,
                in_transaction: false,
            });
        if h.producer_epoch != entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == MAX_CACHED_BATCHES {
            entry.batches.pop_front();
        }
        entry.batches.push_back(BatchMetadata {
            first_seq: h.base_sequence,
            last_seq: last_sequence(h.base_sequence, h.last_offset_delta),
            first_offset,
            last_offset,
            log_append_time,
        });
        entry.last_seen_ms = now_ms;
        entry.in_transaction |= h.is_transactional();
    }

    /// A transaction marker of `producer_id` was written with `epoch`: the coordinator may
    /// have bumped it to fence a zombie, so batches of older epochs are refused from now on
    /// (a marker carries no sequence; the next data batch of a newer epoch starts at 0).
    pub fn on_marker(&mut self, producer_id: i64, epoch: i16, now_ms: i64) {
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch,
                batches: VecDeque::new(),
                last_seen_ms: now_ms,
                in_transaction: false,
            });
        if epoch > entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.last_seen_ms = now_ms;
        entry.in_transaction = false;
    }

    /// Producers tracked here: (producer id, entry), for DescribeProducers.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &ProducerEntry)> {
        self.producers.iter().map(|(id, e)| (*id, e))
    }

    /// Forget producers idle for longer than `producer.id.expiration.ms` and not in a
    /// transaction.
    pub fn expire(&mut self, now_ms: i64) {
        let (expiration_ms, mut producers) =
            (self.expiration_ms, std::mem::take(&mut self.producers));
        producers.retain(|_, e| {
            e.in_transaction || now_ms.saturating_sub(e.last_seen_ms) <= expiration_ms
        });
        self.producers = producers;
    }

    /// The producer's entry unless it has expired by `now_ms`.
    fn live(&self, producer_id: i64, now_ms: i64) -> Option<&ProducerEntry> {
        self.producers
            .get(&producer_id)
            .filter(|e| !self.expired(e, now_ms))
    }

    /// Drop everything (the log was truncated or replaced).
    pub fn clear(&mut self) {
        self.producers.clear();
    }

    #[must_use]
    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

/// Where `rebuild` starts: the earlier of the active segment's base and the first record of
/// the last `REBUILD_WINDOW_MS`, but not before the second-to-last segment nor the log start.
pub(crate) fn rebuild_start(log: &PartitionLog, now_ms: i64) -> i64 {
    let bases = log.segment_base_offsets();
    let end = log.log_end_offset();
    let active = bases.last().copied().unwrap_or(end);
    let floor = bases
        .len()
        .checked_sub(2)
        .map_or(active, |i| bases[i])
        .max(log.log_start_offset());
    let recent = match log.offset_for_timestamp(now_ms - REBUILD_WINDOW_MS) {
        Ok(Some((offset, _))) => offset,
        _ => end,
    };
    active.min(recent).max(floor)
}

/// Call `visit` with the header of every batch from the one holding `from` to the log end,
/// reading headers in `SCAN_CHUNK` preads (never whole large batches).
pub fn replay_headers(
    log: &PartitionLog,
    from: i64,
    mut visit: impl FnMut(&BatchHeader),
) -> Result<()> {
    let mut next = from.max(log.log_start_offset());
    let mut chunk = vec![0u8; SCAN_CHUNK];
    while next < log.log_end_offset() {
        let Some(slice) = log.read(next, 64 << 20, None)? else {
            break;
        };
        let end = slice.position + slice.len;
        let mut position = slice.position;
        // File range currently held in `chunk`.
        let (mut chunk_start, mut chunk_len) = (0u64, 0usize);
        let mut advanced = false;
        while position + BATCH_HEADER_LEN as u64 <= end {
            let in_chunk = position >= chunk_start
                && position + BATCH_HEADER_LEN as u64 <= chunk_start + chunk_len as u64;
            if !in_chunk {
                let want = SCAN_CHUNK.min((end - position) as usize);
                let n = read_fully_at(&slice.file, &mut chunk[..want], position)?;
                chunk_start = position;
                chunk_len = n;
                if n < BATCH_HEADER_LEN {
                    break;
                }
            }
            let at = (position - chunk_start) as usize;
            let Ok(header) = BatchHeader::parse(&chunk[at..chunk_len]) else {
                return Ok(());
            };
            visit(&header);
            next = header.last_offset() + 1;
            advanced = true;
            position += header.total_size() as u64;
        }
        if !advanced {
            break;
        }
    }
    Ok(())
}

fn read_fully_at(file: &std::fs::File, buf: &mut [u8], position: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], position + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_codes::{INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER};

    fn header(pid: i64, epoch: i16, seq: i32, count: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 49,
            partition_leader_epoch: -1,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: count,
        }
    }

    #[test]
    fn sequences_wrap_like_kafka() {
        assert_eq!(last_sequence(0, 4), 4);
        assert_eq!(last_sequence(i32::MAX, 0), i32::MAX);
        assert_eq!(last_sequence(i32::MAX, 1), 0);
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        assert!(in_sequence(4, 5));
        assert!(in_sequence(i32::MAX, 0));
        assert!(!in_sequence(4, 6));
        assert!(!in_sequence(4, 4));
    }

    #[test]
    fn duplicate_gap_epoch_rules() {
        let mut t = ProducerStateTable::default();
        let h0 = header(7, 0, 0, 5);
        // Unknown producer: any sequence goes.
        assert_eq!(t.check(&header(7, 0, 42, 1), 0).unwrap(), Verdict::Append);
        assert_eq!(t.check(&h0, 0).unwrap(), Verdict::Append);
        t.record(&h0, 100, 104, -1, 0);
        // Exact retry of a cached batch.
        match t.check(&h0, 0).unwrap() {
            Verdict::Duplicate(b) => assert_eq!((b.first_offset, b.last_offset), (100, 104)),
            other => panic!("{other:?}"),
        }
        // In sequence.
        assert_eq!(t.check(&header(7, 0, 5, 2), 0).unwrap(), Verdict::Append);
        // Gap and overlap.
        assert_eq!(
            t.check(&header(7, 0, 6, 1), 0).unwrap_err().kafka_code(),
            OUT_OF_ORDER_SEQUENCE_NUMBER
        );
        assert_eq!(
            t.check(&header(7, 0, 3, 1), 0).unwrap_err().kafka_code(),
            OUT_OF_ORDER_SEQUENCE_NUMBER
        );
        // Newer epoch must restart at 0.
        assert_eq!(
            t.check(&header(7, 1, 5, 1), 0).unwrap_err().kafka_code(),
            OUT_OF_ORDER_SEQUENCE_NUMBER
        );
        assert_eq!(t.check(&header(7, 1, 0, 1), 0).unwrap(), Verdict::Append);
        t.record(&header(7, 1, 0, 1), 105, 105, -1, 0);
        // Older epoch is fenced.
        assert_eq!(
            t.check(&header(7, 0, 5, 1), 0).unwrap_err().kafka_code(),
            INVALID_PRODUCER_EPOCH
        );
        // Non-idempotent batches are not checked.
        assert_eq!(t.check(&header(-1, -1, -1, 1), 0).unwrap(), Verdict::Append);
    }

    #[test]
    fn keeps_only_last_five_batches_and_wraps() {
        let mut t = ProducerStateTable::default();
        let mut seq = i32::MAX - 3;
        for i in 0..7 {
            let h = header(1, 0, seq, 2);
            assert_eq!(t.check(&h, 0).unwrap(), Verdict::Append, "batch {i}");
            t.record(&h, i * 2, i * 2 + 1, -1, 0);
            let last = last_sequence(seq, 1);
            seq = if last == i32::MAX { 0 } else { last + 1 };
        }
        let entry = t.get(1).unwrap();
        assert_eq!(entry.batches.len(), MAX_CACHED_BATCHES);
        assert_eq!(entry.batches.front().unwrap().first_offset, 4);
        // The first two batches fell out of the cache: a retry of them is out of order.
        assert_eq!(
            t.check(&header(1, 0, i32::MAX - 3, 2), 0)
                .unwrap_err()
                .kafka_code(),
            OUT_OF_ORDER_SEQUENCE_NUMBER
        );
    }

    fn idempotent_batch(pid: i64, epoch: i16, seq: i32, n: usize, ts: i64) -> Vec<u8> {
        use crate::records::{encode_batch, Compression, RecordInput};
        let records: Vec<RecordInput> = (0..n)
            .map(|i| RecordInput {
                timestamp: ts,
                key: Some(vec![b'k'; 4]),
                value: Some(vec![i as u8; 8]),
                headers: Vec::new(),
            })
            .collect();
        let mut b = encode_batch(&records, Compression::None, 0).unwrap();
        b[43..51].copy_from_slice(&pid.to_be_bytes());
        b[51..53].copy_from_slice(&epoch.to_be_bytes());
        b[53..57].copy_from_slice(&seq.to_be_bytes());
        let crc = crate::records::batch::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn rebuilt_after(timestamp: i64) -> (ProducerStateTable, Vec<i64>) {
        use crate::storage::LogConfig;
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 250,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(dir.path(), config.clone()).unwrap();
        // Producer 2 only writes the very first batch; producer 1 writes ten.
        log.append_shared(&idempotent_batch(2, 0, 0, 2, timestamp), 0)
            .unwrap();
        for i in 0..10 {
            log.append_shared(&idempotent_batch(1, 3, i * 2, 2, timestamp), 0)
                .unwrap();
        }
        log.append_shared(
            &crate::records::encode_batch(
                &[crate::records::RecordInput {
                    timestamp,
                    key: None,
                    value: None,
                    headers: Vec::new(),
                }],
                crate::records::Compression::None,
                0,
            )
            .unwrap(),
            0,
        )
        .unwrap();
        log.close().unwrap();
        let log = PartitionLog::open(dir.path(), config).unwrap();
        let bases = log.segment_base_offsets();
        assert!(
            bases.len() >= 4,
            "test needs several segments, got {bases:?}"
        );
        (ProducerStateTable::rebuild(&log), bases)
    }

    #[test]
    fn rebuild_replays_the_tail_of_the_log() {
        for timestamp in [1_000, crate::storage::clock::now_ms()] {
            let (table, bases) = rebuilt_after(timestamp);
            let entry = table.get(1).expect("producer 1 is in the tail");
            assert_eq!(entry.epoch, 3);
            assert_eq!(entry.last_seq(), Some(19));
            let last = *entry.batches.back().unwrap();
            assert_eq!((last.first_offset, last.last_offset), (20, 21));
            // The retried last batch is recognised as a duplicate after the restart.
            let retry = BatchHeader::parse(&idempotent_batch(1, 3, 18, 2, timestamp)).unwrap();
            assert_eq!(table.check(&retry, 0).unwrap(), Verdict::Duplicate(last));
            let next = BatchHeader::parse(&idempotent_batch(1, 3, 20, 1, timestamp)).unwrap();
            assert_eq!(table.check(&next, 0).unwrap(), Verdict::Append);
            // Producer 2 lives only in the first segment, beyond the replayed tail.
            assert!(table.get(2).is_none(), "segments {bases:?}");
            assert_eq!(table.len(), 1);
        }
    }

    #[test]
    fn expires_idle_producers() {
        let mut t = ProducerStateTable::default();
        t.record(&header(1, 0, 0, 1), 0, 0, -1, 0);
        t.record(&header(2, 0, 0, 1), 1, 1, -1, PRODUCER_ID_EXPIRATION_MS);
        t.expire(PRODUCER_ID_EXPIRATION_MS + 1);
        assert!(t.get(1).is_none());
        assert!(t.get(2).is_some());
    }

    #[test]
    fn the_expiration_is_the_brokers_and_spares_open_transactions() {
        let mut t = ProducerStateTable::default();
        t.set_expiration_ms(1000);
        t.record(&header(1, 0, 0, 1), 0, 0, -1, 0);
        let mut txn = header(2, 0, 0, 1);
        txn.attributes |= crate::records::batch::ATTR_TRANSACTIONAL;
        t.record(&txn, 1, 1, -1, 0);
        // Sequence 5 after 0 is out of order while producer 1 is known ...
        let gap = header(1, 0, 5, 1);
        assert!(t.check(&gap, 1000).is_err());
        // ... and starts it afresh once it has expired, without a sweep.
        assert_eq!(t.check(&gap, 1001).unwrap(), Verdict::Append);
        t.record(&gap, 2, 2, -1, 1001);
        assert_eq!(t.get(1).unwrap().batches.len(), 1, "history restarted");
        t.expire(5000);
        assert!(t.get(1).is_none());
        assert!(t.get(2).is_some(), "a producer in a transaction is kept");
        t.on_marker(2, 0, 5000);
        t.expire(6001);
        assert!(t.get(2).is_none(), "expired once its transaction ended");
    }
}
