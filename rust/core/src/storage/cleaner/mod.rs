//! Log compaction, as Kafka's LogCleaner does it: closed segments are rewritten keeping only
//! the latest record per key; tombstones go once their delete horizon has passed; offsets
//! never change.
//!
//! A pass has three phases, so produce and fetch never wait for it:
//! 1. `PartitionLog::begin_compaction`, under the owner's lock and quick: decide whether to
//!    clean (policy, `min.compaction.lag.ms`, dirty ratio, `max.compaction.lag.ms`) and
//!    snapshot the closed segments (their `Arc<File>`s, sizes, offsets).
//! 2. `CompactionJob::run`, without the lock: map key → latest offset over the dirty
//!    section, then filter every closed segment up to the map's end into
//!    `<base>.log.cleaned` files (several small segments merge into one), fsynced.
//! 3. `PartitionLog::finish_compaction`, under the lock and quick: for each cleaned file
//!    whose segments are still in the log unchanged, swap it in Kafka's way: rename it to
//!    `<base>.log.swap` (the commit point), delete the old segments' files, rename the swap
//!    file to `<base>.log`, write its indexes. A truncation since phase 1 discards the pass.
//!
//! Tombstones follow KIP-534: the first pass that keeps one stamps its batch with a delete
//! horizon (now + `delete.retention.ms`, in baseTimestamp, attribute bit 6, record
//! timestamps unchanged); a pass after the horizon removes it. Records without a key are
//! removed, control batches kept whole, batches left empty dropped.
//!
//! `recover_interrupted` (run by `PartitionLog::open`) deletes `.cleaned` files and
//! completes `.swap` files, so a crash at any point leaves either the old segments or the
//! cleaned one.
//!
//! Dirty means "not yet seen by a pass": offsets at or past the `cleaner-offset-checkpoint`
//! file's offset. The dirty ratio is dirty bytes over all cleanable bytes.

use std::fs::{self, File};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::storage::batch_filter::FilterCounts;
use crate::storage::clean_files::{remove_segment_files, suffixed_path, sync_dir, SWAP_SUFFIX};
use crate::storage::config::LogConfig;
use crate::storage::files::remove_if_exists;
use crate::storage::log::PartitionLog;
use crate::storage::offset_map::DEFAULT_MAX_ENTRIES;
use crate::storage::segment::Segment;

mod chunk_io;
mod job;

/// What one pass did. Byte and record counts cover the segments the pass examined.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionStats {
    /// Why nothing was cleaned, when nothing was.
    pub skipped: Option<&'static str>,
    pub dirty_ratio: f64,
    pub first_dirty_offset: i64,
    /// The new cleaner checkpoint: offsets below it have been through a pass.
    pub cleaned_up_to: i64,
    /// Segments replaced by cleaned ones, and how many cleaned ones replaced them.
    pub segments_cleaned: usize,
    pub segments_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Everything read: the map's dirty section plus the segments filtered.
    pub bytes_read: u64,
    pub records_kept: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    pub duration: Duration,
}

impl CompactionStats {
    /// Cleaning throughput: bytes of log examined per second of the whole pass.
    #[must_use]
    pub fn mb_per_sec(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs > 0.0 {
            self.bytes_before as f64 / 1e6 / secs
        } else {
            0.0
        }
    }
}

/// A closed segment as phase 1 saw it; phase 3 checks it is still there, unchanged.
#[derive(Clone, Debug)]
struct SegmentSnapshot {
    base_offset: i64,
    next_offset: i64,
    size: u64,
    max_timestamp: i64,
    file: Arc<File>,
    index_entries: (usize, usize),
}

impl SegmentSnapshot {
    fn of(segment: &Segment) -> SegmentSnapshot {
        SegmentSnapshot {
            base_offset: segment.base_offset,
            next_offset: segment.next_offset(),
            size: segment.size(),
            max_timestamp: segment.max_timestamp(),
            file: Arc::clone(segment.file()),
            index_entries: segment.index_entries(),
        }
    }
}

/// One compaction at a time per log: two would write the same `.cleaned` files.
struct BusyGuard(Arc<AtomicBool>);

impl BusyGuard {
    fn acquire(flag: &Arc<AtomicBool>) -> Option<BusyGuard> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| BusyGuard(Arc::clone(flag)))
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Phase 2's input: everything it needs without the log's lock.
pub struct CompactionJob {
    dir: PathBuf,
    config: LogConfig,
    now_ms: i64,
    /// The cleanable closed segments, oldest first.
    segments: Vec<SegmentSnapshot>,
    /// Base of the first segment after them: where a complete map ends.
    end_offset: i64,
    truncations: u64,
    max_map_entries: usize,
    /// Aborted transactions (producer id, first offset, marker offset): their batches are
    /// removed (`with_transactions`).
    aborted: Vec<(i64, i64, i64)>,
    stats: CompactionStats,
    started: Instant,
    busy: Option<BusyGuard>,
}

/// Phase 2's output, for `PartitionLog::finish_compaction`.
pub struct CleanedLog {
    groups: Vec<CleanedGroup>,
    /// `None` when the pass was skipped.
    cleaned_up_to: Option<i64>,
    truncations: u64,
    stats: CompactionStats,
    started: Instant,
    busy: Option<BusyGuard>,
}

/// A cleaned file and the segments it replaces.
struct CleanedGroup {
    replaced: Vec<SegmentSnapshot>,
    segment: Option<Segment>,
    cleaned_path: PathBuf,
    counts: FilterCounts,
    /// The `.cleaned` file was renamed or removed: nothing left for `drop` to tidy.
    settled: bool,
    installed_size: u64,
}

impl Drop for CleanedGroup {
    fn drop(&mut self) {
        if !self.settled {
            // Nothing else refers to it; a leftover is also removed at the next open.
            let _ = remove_if_exists(&self.cleaned_path);
        }
    }
}

impl PartitionLog {
    /// Phase 1: decide and snapshot. Cheap; call under the owner's lock. `force` ignores
    /// the dirty ratio (the policy and `min.compaction.lag.ms` still apply).
    pub fn begin_compaction(&self, now_ms: i64, force: bool) -> Result<CompactionJob> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let (checkpoint, truncations, busy) = self.cleaner_state();
        let mut job = CompactionJob {
            dir: self.dir().to_path_buf(),
            config: self.config().clone(),
            now_ms,
            segments: Vec::new(),
            end_offset: 0,
            truncations,
            max_map_entries: DEFAULT_MAX_ENTRIES,
            aborted: Vec::new(),
            stats: CompactionStats::default(),
            started: Instant::now(),
            busy: None,
        };
        if !job.config.cleanup_policy.compact {
            return Ok(job.skip("cleanup.policy does not include compact"));
        }
        let segments = self.segments();
        // The last segment is active and never cleaned.
        let closed = &segments[..segments.len() - 1];
        let cleanable = cleanable_prefix(closed, &job.config, now_ms);
        let first_dirty = checkpoint.max(self.log_start_offset());
        let (clean, dirty) = split_bytes(cleanable, first_dirty);
        job.stats.first_dirty_offset = first_dirty;
        job.stats.dirty_ratio = if clean + dirty > 0 {
            dirty as f64 / (clean + dirty) as f64
        } else {
            0.0
        };
        if cleanable.is_empty() {
            return Ok(job.skip("no closed segment is past min.compaction.lag.ms"));
        }
        let due = force
            || (dirty > 0
                && (job.stats.dirty_ratio >= job.config.min_cleanable_dirty_ratio
                    || overdue(cleanable, first_dirty, &job.config, now_ms)?));
        if !due {
            return Ok(job.skip("dirty ratio is below min.cleanable.dirty.ratio"));
        }
        let Some(guard) = BusyGuard::acquire(busy) else {
            return Ok(job.skip("another compaction of this log is running"));
        };
        job.busy = Some(guard);
        job.segments = cleanable.iter().map(SegmentSnapshot::of).collect();
        job.end_offset = segments[cleanable.len()].base_offset;
        Ok(job)
    }

    /// Phase 3: swap the cleaned segments in. Cheap; call under the owner's lock.
    pub fn finish_compaction(&mut self, mut cleaned: CleanedLog) -> Result<CompactionStats> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let mut stats = std::mem::take(&mut cleaned.stats);
        // Released here, not with the rest of `cleaned` in the background.
        let _busy = cleaned.busy.take();
        let Some(cleaned_up_to) = cleaned.cleaned_up_to else {
            stats.duration = cleaned.started.elapsed();
            return Ok(stats);
        };
        if self.cleaner_state().1 != cleaned.truncations {
            stats.skipped = Some("the log was truncated during compaction");
            stats.duration = cleaned.started.elapsed();
            return Ok(stats);
        }
        // Commit every group first, so two directory syncs cover the whole pass.
        let mut committed = Vec::new();
        for (i, group) in cleaned.groups.iter_mut().enumerate() {
            if self.commit(group)? {
                committed.push(i);
            } else {
                group.discard()?;
            }
        }
        if !committed.is_empty() {
            sync_dir(self.dir())?;
        }
        let mut retired = Vec::new();
        for (n, &i) in committed.iter().enumerate() {
            let group = &mut cleaned.groups[i];
            if let Err(e) = self.swap_in(group, &mut retired) {
                // Groups not yet swapped still have their old segments whole: uncommit them
                // rather than have the next open swap in what this run no longer tracks.
                for &later in &committed[n + 1..] {
                    let base = cleaned.groups[later].base_offset();
                    let _ = remove_if_exists(&suffixed_path(self.dir(), base, SWAP_SUFFIX));
                }
                return Err(e);
            }
            stats.segments_cleaned += group.replaced.len();
            stats.segments_after += 1;
            // `run` counted the group at its old size.
            let before: u64 = group.replaced.iter().map(|s| s.size).sum();
            stats.bytes_after = stats.bytes_after.saturating_sub(before) + group.installed_size;
            stats.records_kept += group.counts.kept;
            stats.records_removed += group.counts.removed;
            stats.tombstones_removed += group.counts.tombstones_removed;
        }
        if !committed.is_empty() {
            sync_dir(self.dir())?;
        }
        stats.cleaned_up_to = cleaned_up_to.max(self.cleaner_state().0);
        self.set_cleaner_checkpoint(stats.cleaned_up_to)?;
        stats.duration = cleaned.started.elapsed();
        close_in_background((retired, cleaned));
        Ok(stats)
    }

    /// All three phases in one call, for an owner without concurrent users.
    pub fn compact(&mut self, now_ms: i64, force: bool) -> Result<CompactionStats> {
        let cleaned = self.begin_compaction(now_ms, force)?.run()?;
        self.finish_compaction(cleaned)
    }

    /// Where `group`'s segments are in the log, if they are all still there, unchanged
    /// and closed (retention may have deleted some meanwhile).
    fn position_of(&self, group: &CleanedGroup) -> Option<usize> {
        let segments = self.segments();
        let first = group.replaced.first()?;
        let start = segments
            .iter()
            .position(|s| Arc::ptr_eq(s.file(), &first.file))?;
        let end = start + group.replaced.len();
        let unchanged = end < segments.len()
            && segments[start..end]
                .iter()
                .zip(&group.replaced)
                .all(|(s, r)| Arc::ptr_eq(s.file(), &r.file) && s.size() == r.size);
        unchanged.then_some(start)
    }

    /// Rename a still-applicable `.cleaned` file to `.swap`: from here on recovery
    /// completes the swap. Returns whether it was committed.
    fn commit(&self, group: &mut CleanedGroup) -> Result<bool> {
        if group.segment.is_none() || self.position_of(group).is_none() {
            return Ok(false);
        }
        let base = group.base_offset();
        fs::rename(
            &group.cleaned_path,
            suffixed_path(self.dir(), base, SWAP_SUFFIX),
        )?;
        group.settled = true;
        Ok(true)
    }

    /// Replace a committed group's segments with its cleaned one, on disk and in memory.
    fn swap_in(&mut self, group: &mut CleanedGroup, retired: &mut Vec<Segment>) -> Result<()> {
        let (Some(start), Some(mut segment)) = (self.position_of(group), group.segment.take())
        else {
            return Err(Error::Io(std::io::Error::other(
                "a committed compaction lost its segments",
            )));
        };
        let dir = self.dir().to_path_buf();
        let base = group.base_offset();
        for old in &group.replaced {
            remove_segment_files(&dir, old.base_offset)?;
        }
        let log_path = suffixed_path(&dir, base, ".log");
        fs::rename(suffixed_path(&dir, base, SWAP_SUFFIX), &log_path)?;
        let indexed = segment.install(log_path);
        group.installed_size = segment.size();
        retired.extend(self.replace_segments(start..start + group.replaced.len(), segment));
        indexed
    }
}

/// Closing the last descriptor of an unlinked segment frees its page cache, tens of
/// milliseconds for large segments: not while the owner holds the log's lock. (Readers
/// may still hold descriptors too; then the last of them pays.)
fn close_in_background<T: Send + 'static>(files: T) {
    let spawned = std::thread::Builder::new()
        .name("kafkalite-cleaner-close".into())
        .spawn(move || drop(files));
    // Without a thread, `files` was dropped by the failed spawn: closed inline.
    drop(spawned);
}

impl CleanedGroup {
    fn base_offset(&self) -> i64 {
        self.replaced.first().map_or(0, |s| s.base_offset)
    }

    /// Remove the `.cleaned` file now rather than when the group is dropped, which may be
    /// later, in the background.
    fn discard(&mut self) -> Result<()> {
        remove_if_exists(&self.cleaned_path)?;
        self.settled = true;
        Ok(())
    }
}

/// Phase 1, 2 and 3 against a log shared behind a mutex: the lock is held only for the
/// snapshot and the swap, so appends and reads go on while segments are filtered.
pub fn compact_shared(
    log: &Mutex<PartitionLog>,
    now_ms: i64,
    force: bool,
) -> Result<CompactionStats> {
    compact_shared_with_transactions(log, now_ms, force, Vec::new(), None)
}

/// `compact_shared` for a log with transactions: aborted transactions' batches are
/// removed, and nothing at or past `first_unstable` (an open transaction) is cleaned.
pub fn compact_shared_with_transactions(
    log: &Mutex<PartitionLog>,
    now_ms: i64,
    force: bool,
    aborted: Vec<(i64, i64, i64)>,
    first_unstable: Option<i64>,
) -> Result<CompactionStats> {
    let lock = || log.lock().map_err(|_| Error::Closed);
    let job = lock()?
        .begin_compaction(now_ms, force)?
        .with_transactions(aborted, first_unstable);
    let cleaned = job.run()?;
    lock()?.finish_compaction(cleaned)
}

/// Closed segments old enough to clean: up to the first holding a record younger than
/// `min.compaction.lag.ms`.
fn cleanable_prefix<'a>(closed: &'a [Segment], config: &LogConfig, now_ms: i64) -> &'a [Segment] {
    if config.min_compaction_lag_ms == 0 {
        return closed;
    }
    let newest_allowed = now_ms.saturating_sub(config.min_compaction_lag_ms);
    let n = closed
        .iter()
        .position(|s| s.max_timestamp() > newest_allowed)
        .unwrap_or(closed.len());
    &closed[..n]
}

/// (clean bytes, dirty bytes) of the cleanable segments.
fn split_bytes(cleanable: &[Segment], first_dirty: i64) -> (u64, u64) {
    cleanable.iter().fold((0, 0), |(clean, dirty), s| {
        if s.next_offset() > first_dirty {
            (clean, dirty + s.size())
        } else {
            (clean + s.size(), dirty)
        }
    })
}

/// Has the oldest dirty record waited longer than `max.compaction.lag.ms`?
fn overdue(
    cleanable: &[Segment],
    first_dirty: i64,
    config: &LogConfig,
    now_ms: i64,
) -> Result<bool> {
    if config.max_compaction_lag_ms == i64::MAX {
        return Ok(false);
    }
    let Some(segment) = cleanable.iter().find(|s| s.next_offset() > first_dirty) else {
        return Ok(false);
    };
    let Some((_, header)) = segment.find(first_dirty)? else {
        return Ok(false);
    };
    Ok(header.max_timestamp >= 0
        && now_ms.saturating_sub(header.max_timestamp) > config.max_compaction_lag_ms)
}

#[cfg(test)]
mod tests;
