//! One segment: a `.log` of whole batches plus its sparse offset and time indexes.
//!
//! Concurrency: a segment is owned by its `PartitionLog`, which serialises every mutation.
//! Readers get an `Arc<File>` and a byte range that only covers batches written in full.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{Appender, Reservation};
use crate::records::{decode_records, BatchHeader};
use crate::storage::config::LogConfig;
use crate::storage::damage::{Damage, DamageAction};
use crate::storage::files::remove_if_exists;
use crate::storage::offset_index::OffsetIndex;
use crate::storage::scan::{
    read_batch_at, read_header_at, read_prefix, scan_valid, HeaderWindow, ScanEnd,
};
use crate::storage::scrubber::ScrubTarget;
use crate::storage::time_index::TimeIndex;

/// Whether `file` holds blocks well past its first `size` bytes (a reservation: ext4 and
/// xfs keep some slack of their own, so a few blocks do not count).
fn blocks_past_end(file: &File, size: u64) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let allocated = file.metadata()?.blocks() * 512;
    Ok(allocated > size.next_multiple_of(4096) + (64 << 10))
}

/// Kafka's file name for a segment: the base offset zero-padded to 20 digits.
#[must_use]
pub fn file_stem(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

/// A batch just written, as the segment needs to index it.
#[derive(Clone, Copy, Debug)]
pub struct WrittenBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub size: u64,
}

pub struct Segment {
    pub base_offset: i64,
    log_path: PathBuf,
    file: Arc<File>,
    appender: Option<Appender>,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    /// One past the last offset stored here (== base_offset when empty).
    next_offset: i64,
    max_timestamp: i64,
    /// Base offset of the first batch that reached `max_timestamp`.
    offset_of_max_timestamp: i64,
    bytes_since_index_entry: u64,
    /// Wall-clock time `segment.ms` counts from. Kafka counts from the first record's
    /// timestamp, which rolls a segment per append when producers send old timestamps;
    /// the segment's creation time does not.
    created_ms: i64,
    /// 1 + the byte position of the damaged header last logged (0: none), so each is
    /// logged once however often it is fetched.
    corrupt_logged: AtomicU64,
}

impl Segment {
    fn paths(dir: &Path, base_offset: i64) -> (PathBuf, PathBuf, PathBuf) {
        let stem = file_stem(base_offset);
        (
            dir.join(format!("{stem}.log")),
            dir.join(format!("{stem}.index")),
            dir.join(format!("{stem}.timeindex")),
        )
    }

    /// `size` bytes of `file` with empty in-memory indexes (the callers fill them in).
    fn unindexed(
        dir: &Path,
        base_offset: i64,
        log_path: PathBuf,
        file: File,
        size: u64,
        created_ms: i64,
    ) -> Segment {
        let (_, index_path, time_path) = Self::paths(dir, base_offset);
        Segment {
            base_offset,
            log_path,
            file: Arc::new(file),
            appender: None,
            size,
            offset_index: OffsetIndex::empty(index_path),
            time_index: TimeIndex::empty(time_path),
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            bytes_since_index_entry: 0,
            created_ms,
            corrupt_logged: AtomicU64::new(0),
        }
    }

    /// A fresh, empty segment (any leftover files with that base are replaced).
    pub fn create(dir: &Path, base_offset: i64, now_ms: i64) -> Result<Segment> {
        let (log_path, index_path, time_path) = Self::paths(dir, base_offset);
        for p in [&index_path, &time_path] {
            remove_if_exists(p)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)?;
        Ok(Segment::unindexed(
            dir,
            base_offset,
            log_path,
            file,
            0,
            now_ms,
        ))
    }

    /// Open an existing segment. With `recover`, every batch is validated and the file is
    /// cut at the first invalid byte; otherwise the indexes are trusted when they load
    /// cleanly and rebuilt when missing or corrupt. Returns the segment and whether bytes
    /// were cut.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        recover: bool,
        damaged: &[Damage],
    ) -> Result<(Segment, bool)> {
        let (log_path, index_path, _) = Self::paths(dir, base_offset);
        let file = OpenOptions::new().read(true).write(true).open(&log_path)?;
        let size = file.metadata()?.len();
        let now_ms = crate::storage::clock::now_ms();
        let mut segment = Segment::unindexed(dir, base_offset, log_path, file, size, now_ms);
        if !recover && segment.load_indexes(index_path)? {
            return Ok((segment, false));
        }
        let cut = segment.rebuild(config, damaged)?;
        Ok((segment, cut))
    }

    /// A segment the cleaner wrote whole to `log_path` (its `.cleaned` file), with
    /// `batches` (position, batch) as written. The indexes are built in memory now and go
    /// to disk in `install`, once the log file has its final name: index files written
    /// earlier would sit next to the old segment's log.
    pub fn cleaned(
        dir: &Path,
        base_offset: i64,
        file: File,
        log_path: PathBuf,
        batches: &[(u64, WrittenBatch)],
        config: &LogConfig,
    ) -> Segment {
        let size = batches.last().map_or(0, |(p, b)| p + b.size);
        let now_ms = crate::storage::clock::now_ms();
        let mut segment = Segment::unindexed(dir, base_offset, log_path, file, size, now_ms);
        for &(position, batch) in batches {
            segment.index_batch(position, batch, config);
        }
        segment.finish_time_index();
        segment
    }

    /// A cleaned segment's log file now has its final name: record it and write the
    /// indexes.
    pub fn install(&mut self, log_path: PathBuf) -> Result<()> {
        self.log_path = log_path;
        self.offset_index.rewrite()?;
        self.time_index.rewrite()?;
        Ok(())
    }

    /// (offset index entries, time index entries): the cleaner keeps merged segments
    /// within `segment.index.bytes`.
    #[must_use]
    pub fn index_entries(&self) -> (usize, usize) {
        (self.offset_index.len(), self.time_index.len())
    }

    /// Trust the index files if they are sane; fill in next offset and max timestamp from
    /// them plus a short header walk from the last index entry.
    fn load_indexes(&mut self, index_path: PathBuf) -> Result<bool> {
        let Some(offset_index) = OffsetIndex::load(index_path, self.size)? else {
            return Ok(false);
        };
        self.offset_index = offset_index;
        let mut position = u64::from(self.offset_index.last().map_or(0, |e| e.position));
        let mut last: Option<BatchHeader> = None;
        while position < self.size {
            let Some(h) = read_header_at(&self.file, position, self.size)? else {
                return Ok(false);
            };
            position += h.total_size() as u64;
            last = Some(h);
        }
        if position != self.size {
            return Ok(false);
        }
        if let Some(h) = &last {
            self.next_offset = h.last_offset() + 1;
        }
        let max_rel = (self.next_offset - self.base_offset).max(0) as u32;
        let Some(time_index) = TimeIndex::load(self.time_index_path(), max_rel)? else {
            return Ok(false);
        };
        self.time_index = time_index;
        match self.time_index.last() {
            Some(e) => {
                self.max_timestamp = e.timestamp;
                self.offset_of_max_timestamp = self.base_offset + i64::from(e.relative_offset);
            }
            // A closed non-empty segment always carries its final time index entry.
            None if self.size > 0 => return Ok(false),
            None => {}
        }
        self.bytes_since_index_entry = 0;
        Ok(true)
    }

    fn time_index_path(&self) -> PathBuf {
        self.log_path.with_extension("timeindex")
    }

    /// Validate the whole file, rebuild both indexes, cut any invalid tail.
    /// `damaged`: the scrubber's marks on this segment. Recovery steps over a marked range
    /// instead of cutting the segment there: those bytes were written whole and acknowledged
    /// before they rotted, and the sound batches after them (later segments too) are kept;
    /// reads still refuse or skip the range as the mark says.
    fn rebuild(&mut self, config: &LogConfig, damaged: &[Damage]) -> Result<bool> {
        let index_path = self.offset_index.path().to_path_buf();
        self.offset_index = OffsetIndex::empty(index_path);
        self.time_index = TimeIndex::empty(self.time_index_path());
        self.next_offset = self.base_offset;
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = self.base_offset;
        self.bytes_since_index_entry = 0;
        let file = Arc::clone(&self.file);
        let size = self.size;
        let mut batches = Vec::new();
        let (mut start, mut min_offset) = (0, self.base_offset);
        let end = loop {
            let end = scan_valid(&file, size, start, min_offset, |position, h| {
                batches.push((
                    position,
                    h.base_offset,
                    h.last_offset(),
                    h.max_timestamp,
                    h.total_size() as u64,
                ));
            })?;
            let marked = end.problem.as_ref().and_then(|_| {
                damaged
                    .iter()
                    .find(|d| d.segment_size == size && d.from == end.valid && d.to > d.from)
            });
            match marked {
                Some(d) => {
                    crate::logging::warn(
                        "kafkalite.log.LogLoader",
                        &format!(
                            "Recovery of {} steps over bytes {}..{} (from offset {}), which the \
                             log scrubber marked damaged, and keeps what follows",
                            self.log_path.display(),
                            d.from,
                            d.to,
                            d.first_offset
                        ),
                    );
                    start = d.to;
                    min_offset = d.first_offset;
                }
                None => break end,
            }
        };
        for (position, base_offset, last_offset, max_timestamp, size) in batches {
            self.index_batch(
                position,
                WrittenBatch {
                    base_offset,
                    last_offset,
                    max_timestamp,
                    size,
                },
                config,
            );
        }
        let cut = end.valid < self.size;
        if cut {
            self.log_truncation(&end)?;
            self.file.set_len(end.valid)?;
            self.size = end.valid;
        }
        self.finish_time_index();
        self.offset_index.rewrite()?;
        self.time_index.rewrite()?;
        Ok(cut)
    }

    /// Say what recovery cuts, as Kafka's log loader does: which file, from which byte and
    /// offset to which, and why. `next_offset` already stops at the last valid batch.
    fn log_truncation(&self, end: &ScanEnd) -> Result<()> {
        let torn = match BatchHeader::parse(&read_prefix(&self.file, end.valid, self.size)?) {
            Ok(h) => format!("a batch of offsets {}..={}", h.base_offset, h.last_offset()),
            Err(_) => "no readable batch header".to_string(),
        };
        crate::logging::warn(
            "kafkalite.log.LogLoader",
            &format!(
                "Found invalid data in log segment {} at byte {}: {}. Truncating the segment \
                 from {} to {} bytes, dropping {} bytes that held {torn}: the segment now \
                 ends before offset {}",
                self.log_path.display(),
                end.valid,
                end.problem.as_deref().unwrap_or("unknown"),
                self.size,
                end.valid,
                self.size - end.valid,
                self.next_offset
            ),
        );
        Ok(())
    }

    fn index_batch(&mut self, position: u64, batch: WrittenBatch, config: &LogConfig) {
        if batch.max_timestamp > self.max_timestamp {
            self.max_timestamp = batch.max_timestamp;
            self.offset_of_max_timestamp = batch.base_offset;
        }
        if self.bytes_since_index_entry >= config.index_interval_bytes && position > 0 {
            let rel = self.relative(batch.base_offset);
            self.offset_index.push(rel, position as u32);
            self.time_index.maybe_push(
                self.max_timestamp,
                self.relative(self.offset_of_max_timestamp),
            );
            self.bytes_since_index_entry = 0;
        }
        self.bytes_since_index_entry += batch.size;
        self.next_offset = batch.last_offset + 1;
    }

    /// Make the time index's last entry the segment's max timestamp, as Kafka does when a
    /// segment stops being active, so a closed segment's max is known without a scan.
    fn finish_time_index(&mut self) {
        if self.max_timestamp >= 0 || self.size > 0 {
            self.time_index.maybe_push(
                self.max_timestamp,
                self.relative(self.offset_of_max_timestamp),
            );
        }
    }

    fn relative(&self, offset: i64) -> u32 {
        debug_assert!(
            offset >= self.base_offset && offset - self.base_offset <= i64::from(u32::MAX)
        );
        (offset - self.base_offset) as u32
    }

    /// Append batches with offsets assigned. `slices` concatenate to the consecutive
    /// batches that `batches` describe; `verify` finishes their validation (see
    /// `Appender::append_verified`), and nothing is appended if it fails.
    pub fn append(
        &mut self,
        slices: &[&[u8]],
        batches: &[WrittenBatch],
        config: &LogConfig,
        verify: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if self.appender.is_none() {
            self.appender = Some(Appender::new(Arc::clone(&self.file), self.size)?);
        }
        let appender = self.appender.as_mut().expect("appender just created");
        appender.set_reservation(Reservation::from_preallocate(config.preallocate));
        let start = self.size;
        let end = appender.append_verified(slices, verify)?;
        debug_assert_eq!(
            end,
            start + slices.iter().map(|s| s.len() as u64).sum::<u64>()
        );
        let mut position = start;
        for b in batches {
            self.index_batch(position, *b, config);
            position += b.size;
        }
        self.size = end;
        Ok(())
    }

    /// Would appending `bytes` more (ending at `last_offset`) need a new segment first?
    #[must_use]
    pub fn should_roll(
        &self,
        config: &LogConfig,
        incoming_bytes: u64,
        last_offset: i64,
        now_ms: i64,
    ) -> bool {
        if self.size == 0 {
            return false;
        }
        let full = self.size + incoming_bytes > config.segment_bytes;
        let aged = now_ms.saturating_sub(self.created_ms) > config.roll_ms();
        let index_full = self.offset_index.len() >= config.max_offset_index_entries()
            || self.time_index.len() >= config.max_time_index_entries();
        let offset_overflow = last_offset - self.base_offset > i64::from(i32::MAX);
        full || aged || index_full || offset_overflow
    }

    /// Stop being the active segment: final time index entry, indexes on disk.
    pub fn close_active(&mut self) -> Result<()> {
        self.finish_time_index();
        self.flush_indexes()?;
        self.release_reserved()
    }

    /// Return blocks reserved ahead of the data (the log is closing). Blocks reserved
    /// before a crash outlive it (KEEP_SIZE, past the end) and no appender made since knows
    /// of them, so whatever the file holds past its end goes too.
    pub fn release_reserved(&mut self) -> Result<()> {
        if let Some(mut appender) = self.appender.take() {
            appender.release_reserved()?;
        }
        if blocks_past_end(&self.file, self.size)? {
            self.file.set_len(self.size)?;
        }
        Ok(())
    }

    /// Return the blocks reserved ahead if no reservation was taken for `idle` (an idle
    /// partition should take about its bytes on disk), or if they were left by a crash.
    /// The next append starts afresh.
    pub fn release_idle_reservation(&mut self, idle: std::time::Duration) -> Result<bool> {
        let idle = match &self.appender {
            Some(appender) => appender.reservation_idle_for(idle),
            None => blocks_past_end(&self.file, self.size)?,
        };
        if idle {
            self.release_reserved()?;
            return Ok(true);
        }
        Ok(false)
    }

    pub fn flush_indexes(&mut self) -> Result<()> {
        self.offset_index.flush()?;
        self.time_index.flush()?;
        Ok(())
    }

    pub fn sync(&mut self) -> Result<()> {
        self.flush_indexes()?;
        self.file.sync_data()?;
        Ok(())
    }

    /// Position and header of the first batch whose last offset is >= `offset`. A damaged
    /// batch header on the way is `CorruptRecord` (logged once): skipping it would hand
    /// the consumer a silent gap.
    pub fn find(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>> {
        self.find_past_damage(offset, &[])
    }

    /// `find`, with the scrubber's `damaged` ranges left out of the walk (their headers
    /// may not even parse). An `offset` inside a damaged range is `CorruptRecord`, or with
    /// `Skip` the next sound batch.
    fn find_past_damage(
        &self,
        offset: i64,
        damaged: &[Damage],
    ) -> Result<Option<(u64, BatchHeader)>> {
        if offset >= self.next_offset {
            return Ok(None);
        }
        let rel = (offset.max(self.base_offset) - self.base_offset) as u32;
        let entry = self.offset_index.lookup(rel);
        let mut position = u64::from(entry.position);
        let mut expected = self.base_offset + i64::from(entry.relative_offset);
        let mut window = HeaderWindow::new();
        loop {
            if let Some(d) = self.damage_at(damaged, position) {
                // The next sound batch tells where the damaged offsets end.
                let next = if d.to < self.size {
                    self.header_at(&mut window, d.to, d.first_offset)?
                } else {
                    None
                };
                let holds_offset = next.as_ref().is_none_or(|h| offset < h.base_offset);
                if holds_offset && d.action == DamageAction::Fail {
                    return Err(self.damaged(d));
                }
                position = d.to;
                expected = d.first_offset;
                continue;
            }
            let Some(h) = self.header_at(&mut window, position, expected)? else {
                return Ok(None);
            };
            if h.last_offset() >= offset {
                return Ok(Some((position, h)));
            }
            expected = h.last_offset() + 1;
            position += h.total_size() as u64;
        }
    }

    /// The damaged range (marked on this very segment) holding byte `position`.
    fn damage_at<'a>(&self, damaged: &'a [Damage], position: u64) -> Option<&'a Damage> {
        damaged
            .iter()
            .find(|d| d.segment_size == self.size && d.from <= position && position < d.to)
    }

    fn damaged(&self, d: &Damage) -> Error {
        Error::corrupt(format!(
            "the batch at byte {} of log segment {} (offset {} or later) failed verification: \
             {}. The log scrubber marked it; `kafkalite log scrub --skip` serves around it, \
             `--truncate` cuts the log there",
            d.from,
            self.log_path.display(),
            d.first_offset,
            d.why
        ))
    }

    /// A snapshot for the scrubber.
    #[must_use]
    pub fn scrub_target(&self) -> ScrubTarget {
        ScrubTarget {
            base_offset: self.base_offset,
            file: Arc::clone(&self.file),
            size: self.size,
            log_path: self.log_path.clone(),
            index_positions: self.offset_index.positions(),
        }
    }

    /// The header at `position`, where the next batch starts at offset `expected` or later
    /// (compaction leaves gaps); `None` at the end of the data. A damaged header is
    /// `CorruptRecord`, logged once.
    fn header_at(
        &self,
        window: &mut HeaderWindow,
        position: u64,
        expected: i64,
    ) -> Result<Option<BatchHeader>> {
        self.inspect(window, position, expected)?
            .map_err(|why| self.corrupt_at(position, expected, &why))
    }

    /// `header_at`, with a damaged header as `Err(why)` inside.
    fn inspect(
        &self,
        window: &mut HeaderWindow,
        position: u64,
        expected: i64,
    ) -> Result<std::result::Result<Option<BatchHeader>, String>> {
        Ok(
            match window.read_checked(&self.file, position, self.size)? {
                Ok(Some(h))
                    if h.base_offset < expected
                        || h.last_offset() < h.base_offset
                        || h.last_offset() >= self.next_offset =>
                {
                    Err(format!(
                        "offsets {}..={} lie outside the {expected}..{} expected there",
                        h.base_offset,
                        h.last_offset(),
                        self.next_offset
                    ))
                }
                found => found,
            },
        )
    }

    fn corrupt_at(&self, position: u64, expected: i64, why: &str) -> Error {
        let message = format!(
            "corrupt batch header in log segment {} at byte {position} (offset {expected} \
             or later): {why}",
            self.log_path.display()
        );
        if self.corrupt_logged.swap(position + 1, Ordering::Relaxed) != position + 1 {
            crate::logging::error(
                "kafkalite.log.LogSegment",
                &format!(
                    "{message}. Fetches that reach it answer CORRUPT_MESSAGE; the records \
                     before it still read"
                ),
            );
        }
        Error::corrupt(message)
    }

    /// Byte range of whole batches starting with the one holding `offset`: the first batch
    /// always (a consumer must make progress past a large batch), then more while they fit
    /// in `max_bytes` and start below `max_offset`.
    /// Damaged ranges (`damaged`, from the scrubber) end the range; see `find_past_damage`.
    pub fn read_range(
        &self,
        offset: i64,
        max_bytes: u64,
        max_offset: i64,
        damaged: &[Damage],
    ) -> Result<Option<(u64, u64, i64)>> {
        let Some((start, first)) = self.find_past_damage(offset, damaged)? else {
            return Ok(None);
        };
        if first.base_offset >= max_offset {
            return Ok(None);
        }
        let limit = start.saturating_add(max_bytes).min(self.size);
        let mut end = start + first.total_size() as u64;
        let mut expected = first.last_offset() + 1;
        // Every header in the range is stepped on (no jump along the index): a damaged one
        // ends the range, so the next fetch starts there and gets CORRUPT_MESSAGE instead
        // of bytes a client may silently skip. Headers come through a window (one read per
        // 16 KiB of small batches), so stepping costs little more than the index jump.
        let mut window = HeaderWindow::new();
        while let Ok(Some(h)) = self.inspect(&mut window, end, expected)? {
            if h.base_offset >= max_offset
                || end + h.total_size() as u64 > limit
                || self.damage_at(damaged, end).is_some()
            {
                break;
            }
            expected = h.last_offset() + 1;
            end += h.total_size() as u64;
        }
        Ok(Some((start, end - start, first.base_offset)))
    }

    /// The first record with timestamp >= `timestamp`: (offset, timestamp).
    pub fn find_timestamp(&self, timestamp: i64, min_offset: i64) -> Result<Option<(i64, i64)>> {
        if self.max_timestamp < timestamp {
            return Ok(None);
        }
        let mut position = match self.time_index.lookup_before(timestamp) {
            Some(e) => u64::from(self.offset_index.lookup(e.relative_offset).position),
            None => 0,
        };
        let mut expected = self.base_offset;
        let mut window = HeaderWindow::new();
        while let Some(h) = self.header_at(&mut window, position, expected)? {
            expected = h.last_offset() + 1;
            if h.max_timestamp >= timestamp && h.last_offset() >= min_offset {
                let batch = read_batch_at(&self.file, position, &h)?;
                for r in decode_records(&batch)? {
                    if r.timestamp >= timestamp && r.offset >= min_offset {
                        return Ok(Some((r.offset, r.timestamp)));
                    }
                }
            }
            position += h.total_size() as u64;
        }
        Ok(None)
    }

    /// The record holding this segment's max timestamp: (offset, timestamp).
    pub fn max_timestamp_record(&self) -> Result<Option<(i64, i64)>> {
        if self.size == 0 || self.max_timestamp < 0 {
            return Ok(None);
        }
        let Some((position, h)) = self.find(self.offset_of_max_timestamp)? else {
            return Ok(None);
        };
        let batch = read_batch_at(&self.file, position, &h)?;
        let best = decode_records(&batch)?
            .into_iter()
            .filter(|r| r.timestamp == self.max_timestamp)
            .map(|r| (r.offset, r.timestamp))
            .next();
        Ok(best)
    }

    /// Remove every batch whose last offset is >= `offset`. Returns the new next offset
    /// (lower than `offset` when a batch straddled it).
    pub fn truncate_to(&mut self, offset: i64, config: &LogConfig) -> Result<i64> {
        let Some((position, header)) = self.find(offset)? else {
            return Ok(self.next_offset);
        };
        self.file.set_len(position)?;
        self.size = position;
        self.appender = None;
        // Rebuilding recomputes max timestamp and both indexes from what is left.
        self.rebuild(config, &[])?;
        Ok(header
            .base_offset
            .min(offset)
            .max(self.base_offset)
            .max(self.next_offset))
    }

    pub fn delete(self) -> Result<()> {
        let time_path = self.time_index_path();
        remove_if_exists(&self.log_path)?;
        remove_if_exists(self.offset_index.path())?;
        remove_if_exists(&time_path)?;
        Ok(())
    }

    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }
    #[must_use]
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    #[must_use]
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    #[must_use]
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }
    #[must_use]
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    /// Last-modified time, for retention of segments whose records carry no timestamps.
    pub fn modified_ms(&self) -> Result<i64> {
        let modified = fs::metadata(&self.log_path)?.modified()?;
        let ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Ok(ms)
    }
}
