//! A partition's log: an ordered run of segments, the last one active.
//!
//! Concurrency: `PartitionLog` is not internally synchronised; the owner (the binding) puts
//! it behind a mutex. Reads hand out `ReadSlice`s holding an `Arc<File>`, so the bytes can be
//! sent after the lock is released, even if retention deletes the segment meanwhile.

use std::fs::{self, File};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::records::{
    assign_offsets, check_batches, check_records_of, validate_batches,
    validate_batches_deferring_crc, BatchInfo,
};
use crate::storage::clean_files::{recover_interrupted, CHECKPOINT_FILE};
use crate::storage::clock::now_ms;
use crate::storage::config::LogConfig;
use crate::storage::damage::{Damage, DamageAction, DamageLog};
use crate::storage::dir_failure;
use crate::storage::files::{remove_if_exists, write_atomically};
use crate::storage::scrubber::ScrubTarget;
use crate::storage::segment::{Segment, WrittenBatch};

/// Written on a clean close: `<next offset> <active segment size>`. Its presence at open
/// means no batch needs re-validating; it is removed as soon as the log is open again.
const CLEAN_SHUTDOWN_FILE: &str = ".kafkalite-clean-shutdown";
/// Offset below which everything is known to be on disk (fsynced); recovery starts there.
const RECOVERY_POINT_FILE: &str = "recovery-point-offset";
const LOG_START_FILE: &str = "log-start-offset";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    /// The broker's timestamp when the topic uses LogAppendTime, else -1.
    pub log_append_time: i64,
    pub max_timestamp: i64,
    pub batch_count: usize,
    pub record_count: i64,
}

/// Whole batches of one segment file, ready to be sent or read.
#[derive(Clone, Debug)]
pub struct ReadSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: u64,
    /// Base offset of the first batch in the slice (may be below the requested offset).
    pub first_offset: i64,
}

/// The recovery point, shared with background syncs of rolled segments.
#[derive(Debug)]
struct RecoveryPoint {
    path: PathBuf,
    offset: Mutex<i64>,
}

impl RecoveryPoint {
    fn advance(&self, offset: i64) -> io::Result<()> {
        let mut current = self
            .offset
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if offset > *current {
            write_atomically(&self.path, &offset.to_string())?;
            *current = offset;
        }
        Ok(())
    }
}

#[path = "log_follower.rs"]
pub mod follower;

pub struct PartitionLog {
    dir: PathBuf,
    config: LogConfig,
    segments: Vec<Segment>,
    log_start_offset: i64,
    next_offset: i64,
    recovery_point: Arc<RecoveryPoint>,
    messages_since_flush: i64,
    last_flush_ms: i64,
    closed: bool,
    /// Offsets below this have been through the cleaner (`cleaner-offset-checkpoint`).
    cleaner_checkpoint: i64,
    /// Counts truncations: a compaction planned before one must not swap anything in.
    truncations: u64,
    cleaner_busy: Arc<AtomicBool>,
    /// Batches the scrubber found damaged (`damaged-batches`).
    damage: DamageLog,
    /// Whether the last shutdown was clean (else the scrubber should look soon).
    opened_clean: bool,
}

impl PartitionLog {
    /// Open (or create) the log in `dir`, recovering from an unclean shutdown.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<PartitionLog> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        recover_interrupted(&dir)?;
        let clean = read_clean_shutdown(&dir);
        let recovery_point = read_number(&dir.join(RECOVERY_POINT_FILE)).unwrap_or(0);
        let bases = list_segment_bases(&dir)?;
        let mut damage = DamageLog::load(&dir);
        let mut segments: Vec<Segment> = Vec::with_capacity(bases.len().max(1));
        for (i, &base) in bases.iter().enumerate() {
            let is_last = i + 1 == bases.len();
            let next_base = bases.get(i + 1).copied().unwrap_or(i64::MAX);
            let needs_recovery = match clean {
                // The active segment must also still be the size it had at close.
                Some((_, active_size)) => {
                    is_last && fs::metadata(segment_log_path(&dir, base))?.len() != active_size
                }
                None => next_base > recovery_point || is_last,
            };
            let (segment, cut) =
                Segment::open(&dir, base, &config, needs_recovery, damage.of_segment(base))?;
            let follows = segments
                .last()
                .is_none_or(|prev| base >= prev.next_offset());
            if !follows {
                segment.delete()?;
                drop_segments(&dir, &bases[i..], "overlaps the segment before it")?;
                break;
            }
            segments.push(segment);
            if cut {
                // Everything after the first invalid byte is gone, later segments included.
                drop_segments(&dir, &bases[i + 1..], "follows a truncated segment")?;
                break;
            }
        }
        if segments.is_empty() {
            let start = read_number(&dir.join(LOG_START_FILE)).unwrap_or(0).max(0);
            segments.push(Segment::create(&dir, start, now_ms())?);
        }
        let next_offset = segments.last().map_or(0, Segment::next_offset);
        let first_base = segments[0].base_offset;
        let log_start_offset = read_number(&dir.join(LOG_START_FILE))
            .unwrap_or(first_base)
            .clamp(first_base, next_offset);
        // From here on a crash must trigger recovery.
        remove_if_exists(&dir.join(CLEAN_SHUTDOWN_FILE))?;
        let recovery_point = Arc::new(RecoveryPoint {
            path: dir.join(RECOVERY_POINT_FILE),
            offset: Mutex::new(recovery_point.min(next_offset)),
        });
        damage.retain_segments(&sizes_of(&segments))?;
        let cleaner_checkpoint = read_number(&dir.join(CHECKPOINT_FILE))
            .unwrap_or(0)
            .min(next_offset);
        Ok(PartitionLog {
            dir,
            config,
            segments,
            log_start_offset,
            next_offset,
            recovery_point,
            messages_since_flush: 0,
            last_flush_ms: now_ms(),
            closed: false,
            cleaner_checkpoint,
            truncations: 0,
            cleaner_busy: Arc::new(AtomicBool::new(false)),
            damage,
            opened_clean: clean.is_some(),
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.closed {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn active(&mut self) -> &mut Segment {
        self.segments
            .last_mut()
            .expect("a log always has an active segment")
    }

    /// Validate a producer's batches (size, CRC, layout), assign offsets in place and append
    /// them. `buf` is modified: baseOffset (and timestamps for LogAppendTime) are rewritten.
    pub fn append(&mut self, buf: &mut [u8], now_ms: i64) -> Result<AppendInfo> {
        self.check_open()?;
        if !self.config.log_append_time {
            // CreateTime: offsets lie outside the CRC, so the CRC pass can overlap the write.
            let infos = validate_batches_deferring_crc(buf, self.config.max_message_bytes)?;
            assign_offsets(buf, &infos, self.next_offset, None);
            let buf = &*buf;
            let rules = self.config.record_rules(now_ms);
            return self.append_validated(&[buf], &infos, None, now_ms, || {
                check_batches(buf, &infos, &rules)
            });
        }
        // LogAppendTime rewrites maxTimestamp and so the CRC: the producer's CRC is checked
        // first, then the records.
        let infos = validate_batches(buf, self.config.max_message_bytes)?;
        check_records_of(buf, &infos, &self.config.record_rules(now_ms))?;
        let log_append_time = Some(now_ms);
        assign_offsets(buf, &infos, self.next_offset, log_append_time);
        self.append_validated(&[&*buf], &infos, log_append_time, now_ms, || Ok(()))
    }

    /// Like `append`, for bytes that cannot be modified (a shared network buffer): the new
    /// base offsets are written from a side buffer through the write's iovec list, so the
    /// record bytes are not copied. LogAppendTime topics need a rewritten CRC, so they
    /// take one copy.
    pub fn append_shared(&mut self, buf: &[u8], now_ms: i64) -> Result<AppendInfo> {
        self.append_shared_in_epoch(buf, now_ms, None)
    }

    /// `append_shared` that also stamps `epoch` as each batch's partitionLeaderEpoch, as a
    /// replicated partition's leader does (the field lies outside the CRC, so it is
    /// written through the iovec list like the base offset).
    pub fn append_shared_in_epoch(
        &mut self,
        buf: &[u8],
        now_ms: i64,
        epoch: Option<i32>,
    ) -> Result<AppendInfo> {
        self.check_open()?;
        if self.config.log_append_time {
            let mut copy = buf.to_vec();
            if let Some(epoch) = epoch {
                stamp_epochs(&mut copy, epoch);
            }
            return self.append(&mut copy, now_ms);
        }
        let infos = validate_batches_deferring_crc(buf, self.config.max_message_bytes)?;
        let mut offset = self.next_offset;
        let bases: Vec<[u8; 8]> = infos
            .iter()
            .map(|info| {
                let base = offset;
                offset += i64::from(info.header.last_offset_delta) + 1;
                base.to_be_bytes()
            })
            .collect();
        let epoch_bytes = epoch.map(i32::to_be_bytes);
        let mut slices: Vec<&[u8]> = Vec::with_capacity(infos.len() * 4);
        for (info, base) in infos.iter().zip(&bases) {
            let end = info.position + info.header.total_size();
            slices.push(base);
            match &epoch_bytes {
                // batchLength, then the epoch in place of the producer's, then the rest.
                Some(e) => {
                    slices.push(&buf[info.position + 8..info.position + 12]);
                    slices.push(e);
                    slices.push(&buf[info.position + 16..end]);
                }
                None => slices.push(&buf[info.position + 8..end]),
            }
        }
        let rules = self.config.record_rules(now_ms);
        self.append_validated(&slices, &infos, None, now_ms, || {
            check_batches(buf, &infos, &rules)
        })
    }

    /// Append validated batches (`slices` concatenate to them, offsets already assigned
    /// from `self.next_offset`). `verify` completes the validation (the CRC pass) while
    /// the write is in flight; if it fails nothing is appended and the log is unchanged.
    fn append_validated(
        &mut self,
        slices: &[&[u8]],
        infos: &[BatchInfo],
        log_append_time: Option<i64>,
        now_ms: i64,
        verify: impl FnOnce() -> Result<()>,
    ) -> Result<AppendInfo> {
        let first_offset = self.next_offset;
        let mut written = Vec::with_capacity(infos.len());
        let mut offset = first_offset;
        let mut max_timestamp = -1;
        let mut record_count = 0i64;
        let mut total_bytes = 0u64;
        for info in infos {
            let h = &info.header;
            let last = offset + i64::from(h.last_offset_delta);
            let ts = log_append_time.unwrap_or(h.max_timestamp);
            max_timestamp = max_timestamp.max(ts);
            record_count += i64::from(h.records_count);
            total_bytes += h.total_size() as u64;
            written.push(WrittenBatch {
                base_offset: offset,
                last_offset: last,
                max_timestamp: ts,
                size: h.total_size() as u64,
            });
            offset = last + 1;
        }
        self.maybe_roll(total_bytes, offset - 1, now_ms)
            .map_err(|e| dir_failure::report(&self.dir, "rolling a segment of", e))?;
        let config = self.config.clone();
        self.active()
            .append(slices, &written, &config, verify)
            .map_err(|e| dir_failure::report(&self.dir, "appending to", e))?;
        self.next_offset = offset;
        self.messages_since_flush += record_count;
        self.maybe_flush(now_ms)
            .map_err(|e| dir_failure::report(&self.dir, "flushing", e))?;
        Ok(AppendInfo {
            first_offset,
            last_offset: offset - 1,
            log_append_time: log_append_time.unwrap_or(-1),
            max_timestamp,
            batch_count: infos.len(),
            record_count,
        })
    }

    fn maybe_roll(&mut self, incoming: u64, last_offset: i64, now_ms: i64) -> Result<()> {
        let config = self.config.clone();
        if self
            .active()
            .should_roll(&config, incoming, last_offset, now_ms)
        {
            self.roll_at(now_ms)?;
        }
        Ok(())
    }

    /// Start a new active segment at the log end. The old one is fsynced in the background
    /// (as Kafka does), then the recovery point moves past it.
    pub fn roll(&mut self) -> Result<()> {
        self.roll_at(now_ms())
    }

    fn roll_at(&mut self, now_ms: i64) -> Result<()> {
        self.check_open()?;
        let next = self.next_offset;
        if self.active().size() == 0 {
            return Ok(());
        }
        self.active().close_active()?;
        let file = Arc::clone(self.active().file());
        let recovery_point = Arc::clone(&self.recovery_point);
        std::thread::Builder::new()
            .name("kafkalite-segment-sync".into())
            .spawn(move || {
                if file.sync_data().is_ok() {
                    // Failure here only means a longer recovery after a crash.
                    let _ = recovery_point.advance(next);
                }
            })?;
        self.segments
            .push(Segment::create(&self.dir, next, now_ms)?);
        Ok(())
    }

    fn maybe_flush(&mut self, now_ms: i64) -> Result<()> {
        let due_by_count = self.messages_since_flush >= self.config.flush_messages;
        let due_by_time = now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        if due_by_count || due_by_time {
            self.flush()?;
        }
        Ok(())
    }

    /// fsync the active segment and its indexes; advance the recovery point.
    pub fn flush(&mut self) -> Result<()> {
        self.check_open()?;
        self.active().sync()?;
        self.recovery_point.advance(self.next_offset)?;
        self.messages_since_flush = 0;
        self.last_flush_ms = now_ms();
        Ok(())
    }

    /// Whole batches starting at the one that holds `offset`, within `max_bytes` (the first
    /// batch is returned whole even if larger) and below `max_offset` (e.g. the high
    /// watermark). `None` when `offset` is the log end or nothing below `max_offset` remains.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
    ) -> Result<Option<ReadSlice>> {
        self.check_open()?;
        if offset < self.log_start_offset || offset > self.next_offset {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset,
                log_end: self.next_offset,
            });
        }
        let max_offset = max_offset.unwrap_or(self.next_offset).min(self.next_offset);
        let first = self
            .segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1);
        // An offset in a gap (compaction, or the end of a segment) continues in the next one.
        for segment in &self.segments[first..] {
            if segment.base_offset >= max_offset {
                break;
            }
            if let Some((position, len, first_offset)) = segment.read_range(
                offset,
                max_bytes,
                max_offset,
                self.damage.of_segment(segment.base_offset),
            )? {
                return Ok(Some(ReadSlice {
                    file: Arc::clone(segment.file()),
                    position,
                    len,
                    first_offset,
                }));
            }
        }
        Ok(None)
    }

    /// The earliest record with timestamp >= `timestamp`: (offset, timestamp).
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
        self.check_open()?;
        for segment in &self.segments {
            if segment.next_offset() <= self.log_start_offset {
                continue;
            }
            if let Some(found) = segment.find_timestamp(timestamp, self.log_start_offset)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The record with the largest timestamp (ListOffsets MAX_TIMESTAMP): (offset, timestamp).
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>> {
        self.check_open()?;
        let best = self
            .segments
            .iter()
            .filter(|s| s.size() > 0 && s.next_offset() > self.log_start_offset)
            .max_by_key(|s| (s.max_timestamp(), std::cmp::Reverse(s.base_offset)));
        match best {
            Some(s) => s.max_timestamp_record(),
            None => Ok(None),
        }
    }

    /// Remove every record at or after `offset` (a follower diverged from its leader).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        self.check_open()?;
        if offset >= self.next_offset {
            return Ok(());
        }
        if offset < self.log_start_offset {
            return self.truncate_fully_and_start_at(offset);
        }
        while self.segments.len() > 1 && self.active().base_offset >= offset {
            let segment = self.segments.pop().expect("len > 1");
            segment.delete()?;
        }
        let config = self.config.clone();
        let new_end = if self.active().base_offset >= offset {
            // Only the first segment is left and all of it goes.
            let base = self.active().base_offset;
            let old = self.segments.pop().expect("one segment");
            old.delete()?;
            self.segments
                .push(Segment::create(&self.dir, base.min(offset), now_ms())?);
            base.min(offset)
        } else {
            self.active().truncate_to(offset, &config)?
        };
        self.next_offset = new_end;
        self.recovery_point.reset(new_end)?;
        self.after_truncation(new_end)
    }

    /// Drop everything and continue at `offset`.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.check_open()?;
        for segment in self.segments.drain(..) {
            segment.delete()?;
        }
        self.segments
            .push(Segment::create(&self.dir, offset, now_ms())?);
        self.next_offset = offset;
        self.log_start_offset = offset;
        write_atomically(&self.dir.join(LOG_START_FILE), &offset.to_string())?;
        self.recovery_point.reset(offset)?;
        self.after_truncation(offset)
    }

    /// Delete whole segments that `retention.ms`, `retention.bytes` or the log start offset
    /// have made obsolete, oldest first, never one holding offsets at or past
    /// `high_watermark`. As in Kafka, the active segment goes too when retention has
    /// expired all of it (records replayed with old timestamps, or `retention.bytes`
    /// smaller than a segment): a new empty segment at the log end is rolled first, and the
    /// log start moves to the log end. Returns how many segments went.
    pub fn apply_retention(&mut self, now_ms: i64, high_watermark: i64) -> Result<usize> {
        self.check_open()?;
        let mut deleted = 0;
        let mut total: u64 = self.segments.iter().map(Segment::size).sum();
        loop {
            let last = self.segments.len() == 1;
            let oldest = &self.segments[0];
            if last && oldest.size() == 0 {
                break;
            }
            let upper = if last {
                self.next_offset
            } else {
                self.segments[1].base_offset
            };
            // The log start never passes the high watermark (Kafka's rule too).
            if upper > high_watermark {
                break;
            }
            // DeleteRecords only frees segments wholly below the new start; the active
            // segment always keeps its place for that.
            let below_start = !last && upper <= self.log_start_offset;
            // Only the delete policy ages data out; a compacted log keeps its latest values.
            let delete = self.config.cleanup_policy.delete;
            let by_time = delete && self.config.retention_ms >= 0 && {
                let newest = if oldest.max_timestamp() >= 0 {
                    oldest.max_timestamp()
                } else {
                    oldest.modified_ms()?
                };
                now_ms.saturating_sub(newest) > self.config.retention_ms
            };
            let by_size = delete
                && self.config.retention_bytes >= 0
                && total.saturating_sub(oldest.size()) >= self.config.retention_bytes as u64;
            if !(below_start || by_time || by_size) {
                break;
            }
            if last {
                // Always one segment: the log end's.
                self.roll()?;
            }
            let segment = self.segments.remove(0);
            total -= segment.size();
            segment.delete()?;
            deleted += 1;
        }
        let first_base = self.segments[0].base_offset;
        if first_base > self.log_start_offset {
            self.set_log_start_offset(first_base)?;
        }
        Ok(deleted)
    }

    /// Move the log start forward (DeleteRecords); whole segments below it go at the next
    /// retention pass.
    pub fn advance_log_start(&mut self, offset: i64) -> Result<()> {
        self.check_open()?;
        if offset > self.next_offset {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset,
                log_end: self.next_offset,
            });
        }
        if offset > self.log_start_offset {
            self.set_log_start_offset(offset)?;
        }
        Ok(())
    }

    fn set_log_start_offset(&mut self, offset: i64) -> Result<()> {
        self.log_start_offset = offset;
        write_atomically(&self.dir.join(LOG_START_FILE), &offset.to_string())?;
        Ok(())
    }

    /// Flush indexes and write the clean-shutdown marker. Data is not fsynced (Kafka's
    /// default; replication is the durability story) unless the flush policy asked for it.
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        for segment in &mut self.segments {
            segment.flush_indexes()?;
        }
        self.active().release_reserved()?;
        let active_size = self.active().size();
        write_atomically(
            &self.dir.join(CLEAN_SHUTDOWN_FILE),
            &format!("{} {}", self.next_offset, active_size),
        )?;
        self.closed = true;
        Ok(())
    }

    /// Give back the blocks reserved ahead of the active segment if its writer has not
    /// needed more for `idle` (see `io::Reservation`); true if some were released.
    pub fn release_idle_reservation(&mut self, idle: std::time::Duration) -> Result<bool> {
        if self.closed {
            return Ok(false);
        }
        self.active().release_idle_reservation(idle)
    }

    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    /// Snapshots of the closed segments (and the active one too with `include_active`)
    /// for the scrubber, which reads them without this log's lock.
    #[must_use]
    pub fn scrub_targets(&self, include_active: bool) -> Vec<ScrubTarget> {
        let closed = self.segments.len() - 1;
        let take = if include_active { closed + 1 } else { closed };
        self.segments[..take]
            .iter()
            .filter(|s| s.size() > 0)
            .map(Segment::scrub_target)
            .collect()
    }

    /// Mark what the scrubber found in `target`, unless that segment has changed since
    /// (deleted, compacted, truncated). Returns the marks that are new.
    pub fn record_damage(
        &mut self,
        target: &ScrubTarget,
        found: Vec<Damage>,
    ) -> Result<Vec<Damage>> {
        let same = self.segments.iter().any(|s| {
            s.base_offset == target.base_offset
                && Arc::ptr_eq(s.file(), &target.file)
                && s.size() == target.size
        });
        if !same || found.is_empty() {
            return Ok(Vec::new());
        }
        self.damage.retain_segments(&sizes_of(&self.segments))?;
        Ok(self.damage.record(found)?)
    }

    /// Every damaged range marked on this log.
    #[must_use]
    pub fn damaged(&self) -> &[Damage] {
        self.damage.all()
    }

    /// What reads do at every marked range; returns how many marks changed.
    pub fn set_damage_action(&mut self, action: DamageAction) -> Result<usize> {
        Ok(self.damage.set_action(action)?)
    }

    /// Whether the previous shutdown was clean.
    #[must_use]
    pub fn opened_clean(&self) -> bool {
        self.opened_clean
    }

    #[must_use]
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    #[must_use]
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    #[must_use]
    pub fn log_end_offset(&self) -> i64 {
        self.next_offset
    }
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::size).sum()
    }
    #[must_use]
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.iter().map(|s| s.base_offset).collect()
    }

    /// How many segments the log has (without collecting their offsets).
    #[must_use]
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether a compaction of this log is under way (its cleaned segments are being
    /// written next to the log and will be swapped in): the log's files are not settled.
    #[must_use]
    pub fn cleaner_running(&self) -> bool {
        self.cleaner_busy.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// What the cleaner (`storage::cleaner`) needs from the log's internals.
impl PartitionLog {
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Put one cleaned segment where `range` of closed segments was; returns those.
    pub(crate) fn replace_segments(
        &mut self,
        range: Range<usize>,
        segment: Segment,
    ) -> Vec<Segment> {
        debug_assert!(range.end < self.segments.len(), "the active segment stays");
        self.segments.splice(range, [segment]).collect()
    }

    /// (cleaner checkpoint, truncation count, flag held while a compaction runs).
    pub(crate) fn cleaner_state(&self) -> (i64, u64, &Arc<AtomicBool>) {
        (
            self.cleaner_checkpoint,
            self.truncations,
            &self.cleaner_busy,
        )
    }

    pub(crate) fn set_cleaner_checkpoint(&mut self, offset: i64) -> Result<()> {
        if offset != self.cleaner_checkpoint {
            write_atomically(&self.dir.join(CHECKPOINT_FILE), &offset.to_string())?;
            self.cleaner_checkpoint = offset;
        }
        Ok(())
    }

    /// Records at or past a truncation point may be rewritten: they are dirty again.
    fn after_truncation(&mut self, new_end: i64) -> Result<()> {
        self.truncations += 1;
        // Marks on segments the truncation removed or cut must not apply to new data.
        self.damage.retain_segments(&sizes_of(&self.segments))?;
        if self.cleaner_checkpoint > new_end {
            self.set_cleaner_checkpoint(new_end)?;
        }
        Ok(())
    }
}

impl RecoveryPoint {
    /// After a truncation the recovery point may not stay past the log end.
    fn reset(&self, offset: i64) -> io::Result<()> {
        let mut current = self
            .offset
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if offset < *current {
            write_atomically(&self.path, &offset.to_string())?;
            *current = offset;
        }
        Ok(())
    }
}

/// Write `epoch` as the partitionLeaderEpoch of every batch in `buf` (a chain of batches
/// whose lengths the caller has not yet validated: a short tail is left alone).
fn stamp_epochs(buf: &mut [u8], epoch: i32) {
    let mut position = 0usize;
    while position + 17 <= buf.len() {
        let len = i32::from_be_bytes(buf[position + 8..position + 12].try_into().expect("4"));
        buf[position + 12..position + 16].copy_from_slice(&epoch.to_be_bytes());
        let Ok(len) = usize::try_from(len) else {
            return;
        };
        position += 12 + len;
    }
}

fn segment_log_path(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{}.log", crate::storage::segment::file_stem(base)))
}

/// Base offsets of the `.log` files in `dir`, ascending; stray index files without a log
/// are removed.
fn list_segment_bases(dir: &Path) -> Result<Vec<i64>> {
    let mut bases = Vec::new();
    let mut orphans = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let (Some(stem), Some(ext)) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        let Ok(base) = stem.parse::<i64>() else {
            continue;
        };
        if stem.len() != 20 {
            continue;
        }
        match ext {
            "log" => bases.push(base),
            "index" | "timeindex" => orphans.push((base, path)),
            _ => {}
        }
    }
    bases.sort_unstable();
    for (base, path) in orphans {
        if bases.binary_search(&base).is_err() {
            remove_if_exists(&path)?;
        }
    }
    Ok(bases)
}

fn drop_segments(dir: &Path, bases: &[i64], why: &str) -> Result<()> {
    if let Some(first) = bases.first() {
        crate::logging::warn(
            "kafkalite.log.LogLoader",
            &format!(
                "Deleting {} segment(s) of {} from base offset {first} on: the first {why}",
                bases.len(),
                dir.display()
            ),
        );
    }
    for &base in bases {
        let stem = crate::storage::segment::file_stem(base);
        for ext in ["log", "index", "timeindex"] {
            remove_if_exists(&dir.join(format!("{stem}.{ext}")))?;
        }
    }
    Ok(())
}

fn sizes_of(segments: &[Segment]) -> Vec<(i64, u64)> {
    segments.iter().map(|s| (s.base_offset, s.size())).collect()
}

fn read_clean_shutdown(dir: &Path) -> Option<(i64, u64)> {
    let text = fs::read_to_string(dir.join(CLEAN_SHUTDOWN_FILE)).ok()?;
    let mut parts = text.split_whitespace();
    let next = parts.next()?.parse().ok()?;
    let size = parts.next()?.parse().ok()?;
    Some((next, size))
}

fn read_number(path: &Path) -> Option<i64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}
