//! Time index: (largest timestamp so far → relative base offset of the batch that first
//! reached it), written as 12-byte big-endian entries to `.timeindex`. Timestamps are
//! strictly increasing, so every batch before an entry's offset has a smaller max timestamp.

use std::io;
use std::path::PathBuf;

use crate::storage::entry_file::EntryFile;

const ENTRY_BYTES: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

#[derive(Debug)]
pub struct TimeIndex {
    entries: Vec<TimeEntry>,
    file: EntryFile,
}

impl TimeIndex {
    #[must_use]
    pub fn empty(path: PathBuf) -> Self {
        TimeIndex {
            entries: Vec::new(),
            file: EntryFile::new(path, ENTRY_BYTES, 0),
        }
    }

    /// Load and sanity-check; `None` when missing or corrupt (wrong size, timestamps or
    /// offsets going backwards, an offset beyond `max_relative_offset`).
    pub fn load(path: PathBuf, max_relative_offset: u32) -> io::Result<Option<Self>> {
        let Some(bytes) = EntryFile::read_entries(&path, ENTRY_BYTES)? else {
            return Ok(None);
        };
        let mut entries: Vec<TimeEntry> = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
        for chunk in bytes.chunks_exact(ENTRY_BYTES) {
            let timestamp = i64::from_be_bytes(chunk[0..8].try_into().unwrap());
            let relative_offset = u32::from_be_bytes(chunk[8..12].try_into().unwrap());
            if let Some(prev) = entries.last() {
                if timestamp <= prev.timestamp || relative_offset < prev.relative_offset {
                    return Ok(None);
                }
            }
            if relative_offset > max_relative_offset {
                return Ok(None);
            }
            entries.push(TimeEntry {
                timestamp,
                relative_offset,
            });
        }
        let written = entries.len();
        Ok(Some(TimeIndex {
            entries,
            file: EntryFile::new(path, ENTRY_BYTES, written),
        }))
    }

    /// Record a new maximum; ignored unless `timestamp` beats the last entry.
    pub fn maybe_push(&mut self, timestamp: i64, relative_offset: u32) {
        if self.entries.last().is_none_or(|e| timestamp > e.timestamp) {
            self.entries.push(TimeEntry {
                timestamp,
                relative_offset,
            });
        }
    }

    /// The last entry with a timestamp strictly below `timestamp`: scanning from its offset
    /// finds the first batch whose max timestamp reaches `timestamp`.
    #[must_use]
    pub fn lookup_before(&self, timestamp: i64) -> Option<TimeEntry> {
        let idx = self.entries.partition_point(|e| e.timestamp < timestamp);
        idx.checked_sub(1).map(|i| self.entries[i])
    }

    #[must_use]
    pub fn last(&self) -> Option<TimeEntry> {
        self.entries.last().copied()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drop entries whose offset is at or past `relative_offset`.
    pub fn truncate_to_offset(&mut self, relative_offset: u32) -> io::Result<()> {
        let keep = self
            .entries
            .partition_point(|e| e.relative_offset < relative_offset);
        self.entries.truncate(keep);
        self.file.truncate(keep)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush(&self.entries, |e, buf| {
            buf.extend_from_slice(&e.timestamp.to_be_bytes());
            buf.extend_from_slice(&e.relative_offset.to_be_bytes());
        })
    }

    pub fn rewrite(&mut self) -> io::Result<()> {
        self.file.reset()?;
        self.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_before_is_strict_floor() {
        let mut idx = TimeIndex::empty(PathBuf::from("/nonexistent"));
        idx.maybe_push(100, 0);
        idx.maybe_push(100, 5); // not a new maximum
        idx.maybe_push(200, 10);
        idx.maybe_push(150, 12); // timestamps out of order are not indexed
        idx.maybe_push(300, 20);
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.lookup_before(100), None);
        assert_eq!(idx.lookup_before(101).unwrap().relative_offset, 0);
        assert_eq!(idx.lookup_before(200).unwrap().relative_offset, 0);
        assert_eq!(idx.lookup_before(250).unwrap().relative_offset, 10);
        assert_eq!(idx.lookup_before(i64::MAX).unwrap().relative_offset, 20);
    }

    #[test]
    fn roundtrip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let mut idx = TimeIndex::empty(path.clone());
        idx.maybe_push(10, 0);
        idx.maybe_push(20, 3);
        idx.flush().unwrap();
        assert_eq!(TimeIndex::load(path.clone(), 3).unwrap().unwrap().len(), 2);
        assert!(TimeIndex::load(path.clone(), 2).unwrap().is_none());
        idx.truncate_to_offset(3).unwrap();
        assert_eq!(TimeIndex::load(path.clone(), 3).unwrap().unwrap().len(), 1);
        std::fs::write(&path, [1u8; 13]).unwrap();
        assert!(TimeIndex::load(path, 3).unwrap().is_none());
    }
}
