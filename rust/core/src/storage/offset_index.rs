//! Sparse offset index: (offset relative to the segment base → byte position in the `.log`),
//! one entry per `index.interval.bytes` of batches. Kept in memory; written to the `.index`
//! file as 8-byte big-endian entries. The active segment's file may lag memory: recovery
//! rebuilds it, so losing the unwritten tail in a crash is harmless.

use std::io;
use std::path::{Path, PathBuf};

use crate::storage::entry_file::EntryFile;

const ENTRY_BYTES: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

#[derive(Debug)]
pub struct OffsetIndex {
    entries: Vec<OffsetEntry>,
    file: EntryFile,
}

impl OffsetIndex {
    #[must_use]
    pub fn empty(path: PathBuf) -> Self {
        OffsetIndex {
            entries: Vec::new(),
            file: EntryFile::new(path, ENTRY_BYTES, 0),
        }
    }

    /// Load and sanity-check an index file. `None` when missing or corrupt (wrong size,
    /// offsets or positions not increasing, a position at or past `log_size`); the caller
    /// rebuilds it from the log.
    pub fn load(path: PathBuf, log_size: u64) -> io::Result<Option<Self>> {
        let Some(bytes) = EntryFile::read_entries(&path, ENTRY_BYTES)? else {
            return Ok(None);
        };
        let mut entries = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
        for chunk in bytes.chunks_exact(ENTRY_BYTES) {
            let relative_offset = u32::from_be_bytes(chunk[0..4].try_into().unwrap());
            let position = u32::from_be_bytes(chunk[4..8].try_into().unwrap());
            if let Some(prev) = entries.last() {
                let prev: &OffsetEntry = prev;
                if relative_offset <= prev.relative_offset || position <= prev.position {
                    return Ok(None);
                }
            }
            if u64::from(position) >= log_size {
                return Ok(None);
            }
            entries.push(OffsetEntry {
                relative_offset,
                position,
            });
        }
        let written = entries.len();
        Ok(Some(OffsetIndex {
            entries,
            file: EntryFile::new(path, ENTRY_BYTES, written),
        }))
    }

    pub fn push(&mut self, relative_offset: u32, position: u32) {
        debug_assert!(self
            .entries
            .last()
            .is_none_or(|e| e.relative_offset < relative_offset));
        self.entries.push(OffsetEntry {
            relative_offset,
            position,
        });
    }

    /// The last entry whose offset is <= `relative_offset`, or position 0.
    #[must_use]
    pub fn lookup(&self, relative_offset: u32) -> OffsetEntry {
        self.last_where(|e| e.relative_offset <= relative_offset)
    }

    /// Every entry's byte position, ascending (each is a batch boundary).
    #[must_use]
    pub fn positions(&self) -> Vec<u64> {
        self.entries.iter().map(|e| u64::from(e.position)).collect()
    }

    /// The last entry whose position is <= `position` (a batch boundary), or position 0.
    #[must_use]
    pub fn lookup_position(&self, position: u32) -> OffsetEntry {
        self.last_where(|e| e.position <= position)
    }

    /// The last entry of the ascending prefix where `at_or_before` holds; the segment's
    /// start when there is none.
    fn last_where(&self, at_or_before: impl Fn(&OffsetEntry) -> bool) -> OffsetEntry {
        match self.entries.partition_point(at_or_before) {
            0 => OffsetEntry {
                relative_offset: 0,
                position: 0,
            },
            idx => self.entries[idx - 1],
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[must_use]
    pub fn last(&self) -> Option<OffsetEntry> {
        self.entries.last().copied()
    }

    /// Drop entries at or past `position` (the log was truncated there).
    pub fn truncate_to_position(&mut self, position: u32) -> io::Result<()> {
        let keep = self.entries.partition_point(|e| e.position < position);
        self.entries.truncate(keep);
        self.file.truncate(keep)
    }

    /// Write entries not yet on disk.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush(&self.entries, |e, buf| {
            buf.extend_from_slice(&e.relative_offset.to_be_bytes());
            buf.extend_from_slice(&e.position.to_be_bytes());
        })
    }

    /// Replace the file with the in-memory entries (after a rebuild).
    pub fn rewrite(&mut self) -> io::Result<()> {
        self.file.reset()?;
        self.flush()
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_with(entries: &[(u32, u32)]) -> OffsetIndex {
        let mut idx = OffsetIndex::empty(PathBuf::from("/nonexistent"));
        for &(o, p) in entries {
            idx.push(o, p);
        }
        idx
    }

    #[test]
    fn lookup_is_floor_with_zero_default() {
        let idx = index_with(&[(10, 4096), (20, 8192), (35, 12288)]);
        assert_eq!(idx.lookup(5).position, 0);
        assert_eq!(idx.lookup(10).position, 4096);
        assert_eq!(idx.lookup(19).position, 4096);
        assert_eq!(idx.lookup(20).position, 8192);
        assert_eq!(idx.lookup(1000).position, 12288);
        assert_eq!(idx.lookup_position(8191).relative_offset, 10);
        assert_eq!(idx.lookup_position(8192).relative_offset, 20);
    }

    #[test]
    fn flush_load_roundtrip_and_corruption_detection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let mut idx = OffsetIndex::empty(path.clone());
        idx.push(1, 100);
        idx.flush().unwrap();
        idx.push(5, 200);
        idx.flush().unwrap();
        let loaded = OffsetIndex::load(path.clone(), 1000).unwrap().unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded.lookup(7).position, 200);
        // A position past the log's end means the index belongs to a longer log.
        assert!(OffsetIndex::load(path.clone(), 150).unwrap().is_none());
        std::fs::write(&path, [0u8; 5]).unwrap();
        assert!(OffsetIndex::load(path.clone(), 1000).unwrap().is_none());
        std::fs::remove_file(&path).unwrap();
        assert!(OffsetIndex::load(path, 1000).unwrap().is_none());
    }

    #[test]
    fn truncate_drops_entries_at_or_after_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.index");
        let mut idx = OffsetIndex::empty(path.clone());
        for i in 1..=4 {
            idx.push(i * 10, i * 100);
        }
        idx.flush().unwrap();
        idx.truncate_to_position(300).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 16);
    }
}
