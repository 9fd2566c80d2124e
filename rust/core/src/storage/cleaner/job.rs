//! Phase 2 of a pass, `CompactionJob::run`: map key -> latest offset over the dirty
//! section, then filter each group of closed segments into one `.cleaned` file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::records::batch::emptied_batch;
use crate::records::{validate_batch, BatchHeader, BATCH_HEADER_LEN};
use crate::storage::batch_filter::{
    filter_batch, stamp_delete_horizon, FilterCounts, Filtered, Verdict,
};
use crate::storage::clean_files::{suffixed_path, CLEANED_SUFFIX};
use crate::storage::config::LogConfig;
use crate::storage::offset_map::OffsetMap;
use crate::storage::record_view::{parse_records, records_section, RecordView};
use crate::storage::segment::{file_stem, Segment};

use super::chunk_io::{ChunkReader, GroupWriter};
use super::{CleanedGroup, CleanedLog, CompactionJob, CompactionStats, SegmentSnapshot};

impl CompactionJob {
    pub(super) fn skip(mut self, reason: &'static str) -> CompactionJob {
        self.stats.skipped = Some(reason);
        self.segments.clear();
        self.busy = None;
        self
    }

    /// Bound the offset map (tests use tiny maps to exercise a partial pass).
    #[must_use]
    pub fn with_max_map_entries(mut self, entries: usize) -> CompactionJob {
        self.max_map_entries = entries;
        self
    }

    /// Kafka's cleaner and transactions: batches of aborted transactions go (they never
    /// reach read_committed fetchers, and must not shadow older values in the map), COMMIT
    /// and ABORT markers stay; segments reaching `first_unstable` (an open transaction,
    /// still undecided) are not cleaned in this pass.
    #[must_use]
    pub fn with_transactions(
        mut self,
        aborted: Vec<(i64, i64, i64)>,
        first_unstable: Option<i64>,
    ) -> CompactionJob {
        self.aborted = aborted;
        if let Some(bound) = first_unstable {
            let keep = self.segments.partition_point(|s| s.next_offset <= bound);
            if keep < self.segments.len() {
                self.end_offset = self.segments[keep].base_offset;
                self.segments.truncate(keep);
                if self.segments.is_empty() && self.busy.is_some() {
                    return self.skip("an open transaction reaches into every cleanable segment");
                }
            }
        }
        self
    }

    fn is_aborted(&self, h: &BatchHeader) -> bool {
        h.is_transactional()
            && !h.is_control()
            && self.aborted.iter().any(|&(pid, first, marker)| {
                pid == h.producer_id && h.base_offset >= first && h.base_offset < marker
            })
    }

    /// Phase 2: map and filter. Slow; run without the log's lock.
    pub fn run(mut self) -> Result<CleanedLog> {
        let mut stats = std::mem::take(&mut self.stats);
        if self.busy.is_none() {
            return Ok(self.into_cleaned(Vec::new(), None, stats));
        }
        let mut map = OffsetMap::new(self.max_map_entries);
        let map_end = self.build_map(&mut map, &mut stats)?;
        let to_clean = self.segments.partition_point(|s| s.base_offset < map_end);
        let mut groups = Vec::new();
        // Per producer: whether its current transaction kept any data in this pass.
        let mut txn_data: HashMap<i64, bool> = HashMap::new();
        for group in group_segments(&self.segments[..to_clean], &self.config) {
            let size: u64 = group.iter().map(|s| s.size).sum();
            stats.bytes_before += size;
            stats.bytes_after += size;
            if let Some(cleaned) =
                self.clean_group(group, &map, map_end, &mut txn_data, &mut stats)?
            {
                groups.push(cleaned);
            }
        }
        Ok(self.into_cleaned(groups, Some(map_end), stats))
    }

    fn into_cleaned(
        self,
        groups: Vec<CleanedGroup>,
        cleaned_up_to: Option<i64>,
        stats: CompactionStats,
    ) -> CleanedLog {
        CleanedLog {
            groups,
            cleaned_up_to,
            truncations: self.truncations,
            stats,
            started: self.started,
            busy: self.busy,
        }
    }

    /// Map every key of the dirty section to its latest offset. Returns where the map
    /// ends: the end of the cleanable segments, or earlier if the map filled up (records
    /// from there on are kept as they are).
    fn build_map(&self, map: &mut OffsetMap, stats: &mut CompactionStats) -> Result<i64> {
        let first_dirty = stats.first_dirty_offset;
        for segment in self.segments.iter().filter(|s| s.next_offset > first_dirty) {
            stats.bytes_read += segment.size;
            let full_at = for_each_batch(segment, |header, batch| {
                if header.last_offset() < first_dirty
                    || header.is_control()
                    || self.is_aborted(header)
                {
                    return Ok(None);
                }
                let count = usize::try_from(header.records_count).unwrap_or(usize::MAX);
                if !map.is_empty() && map.would_overflow(count) {
                    return Ok(Some(header.base_offset));
                }
                map_batch(map, header, batch);
                Ok(None)
            })?;
            if let Some(end) = full_at {
                return Ok(end);
            }
        }
        Ok(self.end_offset)
    }

    /// Filter `group` into one `.cleaned` file. `None` when nothing would change.
    fn clean_group(
        &self,
        group: &[SegmentSnapshot],
        map: &OffsetMap,
        map_end: i64,
        txn_data: &mut HashMap<i64, bool>,
        stats: &mut CompactionStats,
    ) -> Result<Option<CleanedGroup>> {
        let base = group[0].base_offset;
        let cleaned_path = suffixed_path(&self.dir, base, CLEANED_SUFFIX);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&cleaned_path)?;
        let mut cleaned = CleanedGroup {
            replaced: group.to_vec(),
            segment: None,
            cleaned_path,
            counts: FilterCounts::default(),
            settled: false,
            installed_size: 0,
        };
        let mut writer = GroupWriter::new(file);
        let horizon = self.now_ms.saturating_add(self.config.delete_retention_ms);
        // Merging segments is a change in itself.
        let mut changed = group.len() > 1;
        // The group's last batch stays, emptied, when none of its records survive: a
        // consumer whose position falls in a trailing gap has a batch end to move to.
        let mut trailing_empty: Option<Vec<u8>> = None;
        for segment in group {
            stats.bytes_read += segment.size;
            for_each_batch(segment, |header, batch| {
                let (filtered, counts) = if header.is_control() && header.is_transactional() {
                    self.marker_verdict(header, batch, horizon, txn_data)?
                } else if header.is_control() {
                    (Filtered::Unchanged, kept_all(header))
                } else if self.is_aborted(header) {
                    let removed = u64::try_from(header.records_count).unwrap_or(0);
                    (
                        Filtered::Empty,
                        FilterCounts {
                            removed,
                            ..FilterCounts::default()
                        },
                    )
                } else {
                    filter_batch(batch, header, horizon, |offset, record| {
                        self.verdict(map, map_end, header, offset, record)
                    })?
                };
                if header.is_transactional() && !header.is_control() {
                    let kept = !matches!(filtered, Filtered::Empty);
                    *txn_data.entry(header.producer_id).or_insert(false) |= kept;
                }
                add_counts(&mut cleaned.counts, counts);
                if !matches!(filtered, Filtered::Empty) {
                    trailing_empty = None;
                }
                match filtered {
                    Filtered::Unchanged => writer.write(header, batch)?,
                    Filtered::Unparseable => {
                        cleaned.counts.kept += kept_all(header).kept;
                        writer.write(header, batch)?;
                    }
                    Filtered::Rewritten(bytes) => {
                        changed = true;
                        writer.write(&BatchHeader::parse(&bytes)?, &bytes)?;
                    }
                    Filtered::Empty => {
                        changed = true;
                        trailing_empty = Some(emptied_batch(batch));
                    }
                }
                Ok(None::<()>)
            })?;
        }
        if let Some(bytes) = trailing_empty {
            writer.write(&BatchHeader::parse(&bytes)?, &bytes)?;
        }
        if !changed {
            // Examined and left as it is: its records count as kept.
            stats.records_kept += cleaned.counts.kept;
            return Ok(None);
        }
        let (file, batches) = writer.finish()?;
        if batches.is_empty() {
            age_empty_segment(&file, group)?;
        }
        let path = cleaned.cleaned_path.clone();
        cleaned.segment = Some(Segment::cleaned(
            &self.dir,
            base,
            file,
            path,
            &batches,
            &self.config,
        ));
        Ok(Some(cleaned))
    }

    /// A transaction marker, as Kafka's cleaner treats it: kept while any data of its
    /// transaction is left in the log; once none is (an aborted transaction, or a
    /// committed one compacted away), the first pass stamps it with a delete horizon
    /// (now + `delete.retention.ms`), and a pass after the horizon removes it, so a
    /// consumer reading at the time still saw the marker close the transaction.
    fn marker_verdict(
        &self,
        header: &BatchHeader,
        batch: &[u8],
        horizon: i64,
        txn_data: &mut HashMap<i64, bool>,
    ) -> Result<(Filtered, FilterCounts)> {
        let had_data = txn_data.remove(&header.producer_id).unwrap_or(false);
        if had_data {
            return Ok((Filtered::Unchanged, kept_all(header)));
        }
        if !header.has_delete_horizon() {
            let stamped = stamp_delete_horizon(batch, header, horizon)?;
            return Ok((stamped, kept_all(header)));
        }
        if header.base_timestamp <= self.now_ms {
            let removed = u64::try_from(header.records_count).unwrap_or(0);
            return Ok((
                Filtered::Empty,
                FilterCounts {
                    removed,
                    ..FilterCounts::default()
                },
            ));
        }
        Ok((Filtered::Unchanged, kept_all(header)))
    }

    /// Kafka's retention rule for one record (`LogCleaner.shouldRetainRecord`).
    fn verdict(
        &self,
        map: &OffsetMap,
        map_end: i64,
        header: &BatchHeader,
        offset: i64,
        record: &RecordView<'_>,
    ) -> Verdict {
        let Some(key) = record.key else {
            // Written before the topic became compacted; the cleaner cannot place it.
            return Verdict::Remove;
        };
        if offset < map_end && map.latest(key).is_some_and(|latest| latest > offset) {
            return Verdict::Remove;
        }
        let horizon_passed = header.has_delete_horizon() && header.base_timestamp <= self.now_ms;
        if !record.has_value && horizon_passed {
            return Verdict::RemoveTombstone;
        }
        Verdict::Keep
    }
}

/// Retention ages a segment without records by its file's mtime: make that the time of
/// the newest record it replaced, so an emptied segment does not outlive its data.
fn age_empty_segment(file: &File, group: &[SegmentSnapshot]) -> Result<()> {
    let newest = group.iter().map(|s| s.max_timestamp).max().unwrap_or(-1);
    if let Ok(ms) = u64::try_from(newest) {
        file.set_modified(std::time::UNIX_EPOCH + Duration::from_millis(ms))?;
    }
    Ok(())
}

fn kept_all(header: &BatchHeader) -> FilterCounts {
    FilterCounts {
        kept: u64::try_from(header.records_count).unwrap_or(0),
        ..FilterCounts::default()
    }
}

fn add_counts(total: &mut FilterCounts, counts: FilterCounts) {
    total.kept += counts.kept;
    total.removed += counts.removed;
    total.tombstones_removed += counts.tombstones_removed;
}

/// Add a batch's keys to the map. Records that do not parse are skipped: the filter keeps
/// such batches whole, so nothing they hold is lost.
fn map_batch(map: &mut OffsetMap, header: &BatchHeader, batch: &[u8]) {
    let Ok(data) = records_section(header, batch) else {
        return;
    };
    let Ok(records) = parse_records(&data, header.records_count) else {
        return;
    };
    for record in records {
        if let Some(key) = record.key {
            map.put(key, header.base_offset + i64::from(record.offset_delta));
        }
    }
}

/// Consecutive segments whose merged size, index entries and offset span still make a
/// valid segment are cleaned into one, so compaction does not leave ever more, ever
/// smaller segments behind.
fn group_segments<'a>(
    segments: &'a [SegmentSnapshot],
    config: &LogConfig,
) -> Vec<&'a [SegmentSnapshot]> {
    let max_bytes = config.segment_bytes.min(i32::MAX as u64);
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let first = &segments[start];
        let (mut bytes, mut entries) = (first.size, first.index_entries);
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            let fits = bytes + next.size <= max_bytes
                && entries.0 + next.index_entries.0 < config.max_offset_index_entries()
                && entries.1 + next.index_entries.1 < config.max_time_index_entries()
                && next.next_offset - first.base_offset <= i64::from(i32::MAX);
            if !fits {
                break;
            }
            bytes += next.size;
            entries = (
                entries.0 + next.index_entries.0,
                entries.1 + next.index_entries.1,
            );
            end += 1;
        }
        groups.push(&segments[start..end]);
        start = end;
    }
    groups
}

/// Call `visit(header, batch)` for each batch of a snapshot segment, validated (CRC
/// included: the cleaner must not give corrupt bytes a fresh CRC). Stops at the first
/// `Some` and returns it.
fn for_each_batch<T>(
    segment: &SegmentSnapshot,
    mut visit: impl FnMut(&BatchHeader, &[u8]) -> Result<Option<T>>,
) -> Result<Option<T>> {
    let mut reader = ChunkReader::new(&segment.file, segment.size);
    let mut position = 0;
    while position < segment.size {
        let corrupt = |e: Error| {
            Error::corrupt(format!(
                "segment {} at byte {position}: {e}",
                file_stem(segment.base_offset)
            ))
        };
        let header =
            BatchHeader::parse(reader.bytes_at(position, BATCH_HEADER_LEN)?).map_err(corrupt)?;
        let batch = reader.bytes_at(position, header.total_size())?;
        validate_batch(batch).map_err(corrupt)?;
        if let Some(found) = visit(&header, batch)? {
            return Ok(Some(found));
        }
        position += header.total_size() as u64;
    }
    Ok(None)
}
