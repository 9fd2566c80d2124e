//! The leader-epoch cache of one partition: for each leader epoch, the first offset written
//! in it (Kafka's `LeaderEpochFileCache`). Followers use it to find where their log diverges
//! from the leader's (OffsetForLeaderEpoch, KIP-101/279): `end_offset_for(epoch)`.
//!
//! Persisted as `<partition dir>/leader-epoch-checkpoint`, byte for byte as Kafka writes it
//! (`CheckpointFile` with `LeaderEpochCheckpointFile`'s formatter), so a data dir moves
//! between kafkalite and Kafka:
//!
//! ```text
//! 0            <- format version
//! 2            <- number of entries
//! 0 0          <- "<epoch> <start offset>", epochs and offsets increasing
//! 1 150
//! ```
//!
//! Every change is written at once to `leader-epoch-checkpoint.tmp`, fsynced and renamed
//! over the checkpoint, so a crash leaves the old or the new file, never a torn one.
//!
//! Concurrency: not synchronised; the owner (the broker's `Partition`) keeps it behind a
//! mutex next to the log.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub const CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// The only format version Kafka has written.
const VERSION: i32 = 0;

/// The first offset a leader wrote in `epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Kafka's answer for an epoch it cannot place (`UNDEFINED_EPOCH`, `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED: (i32, i64) = (-1, -1);

#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    /// Increasing in both epoch and start offset (Kafka's invariant; `assign` keeps it).
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// Load `dir/leader-epoch-checkpoint`, or start empty if there is none. A file that is
    /// not Kafka's format is an error, as in Kafka: the epochs guard against data loss and
    /// are not guessed.
    pub fn open(dir: impl AsRef<Path>) -> Result<LeaderEpochCache> {
        let path = dir.as_ref().join(CHECKPOINT_FILE);
        let entries = match fs::read_to_string(&path) {
            Ok(text) => parse(&text).map_err(|why| {
                Error::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("malformed {}: {why}", path.display()),
                ))
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        Ok(LeaderEpochCache { path, entries })
    }

    /// Keep the checkpoint in `dir` from now on (the partition's files were moved there).
    pub fn relocate(&mut self, dir: impl AsRef<Path>) {
        self.path = dir.as_ref().join(CHECKPOINT_FILE);
    }

    #[must_use]
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    #[must_use]
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Record that `epoch` starts at `start_offset` (a new leader's first append). Entries
    /// that the new one contradicts — an epoch at or above it, or a start offset at or past
    /// it — are dropped, as Kafka does. Returns whether anything changed (and was written).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool> {
        if epoch < 0 || start_offset < 0 {
            return Ok(false);
        }
        let needed = self
            .entries
            .last()
            .is_none_or(|last| last.epoch != epoch || start_offset < last.start_offset);
        if !needed {
            return Ok(false);
        }
        self.entries
            .retain(|e| e.epoch < epoch && e.start_offset < start_offset);
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.flush()?;
        Ok(true)
    }

    /// The log was truncated to `end_offset` (everything at or past it is gone): forget the
    /// epochs that started there or later.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        if end_offset < 0
            || self
                .entries
                .last()
                .is_none_or(|e| e.start_offset < end_offset)
        {
            return Ok(());
        }
        self.entries.retain(|e| e.start_offset < end_offset);
        self.flush()
    }

    /// The log start moved to `start_offset` (retention, DeleteRecords): epochs that began
    /// before it go, except the one covering it, which now starts there.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<()> {
        let before = self
            .entries
            .iter()
            .take_while(|e| e.start_offset <= start_offset)
            .count();
        let Some(covering) = before.checked_sub(1).map(|i| self.entries[i]) else {
            return Ok(());
        };
        if before == 1 && covering.start_offset == start_offset {
            return Ok(());
        }
        self.entries.drain(..before);
        self.entries.insert(
            0,
            EpochEntry {
                epoch: covering.epoch,
                start_offset,
            },
        );
        self.flush()
    }

    /// Forget every epoch (the log was emptied and restarted at a new offset).
    pub fn clear(&mut self) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        self.entries.clear();
        self.flush()
    }

    /// OffsetForLeaderEpoch, as Kafka's `endOffsetFor`: the largest epoch at or below
    /// `requested` and the offset where the next epoch starts (the log end offset for the
    /// latest epoch). `UNDEFINED` when the epoch is unknown or newer than every entry.
    #[must_use]
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
        if requested < 0 {
            return UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let Some(higher) = self.entries.iter().find(|e| e.epoch > requested) else {
            return UNDEFINED;
        };
        let floor = self.entries.iter().rev().find(|e| e.epoch <= requested);
        (floor.map_or(requested, |e| e.epoch), higher.start_offset)
    }

    /// Kafka's file text for the current entries.
    #[must_use]
    pub fn checkpoint_text(&self) -> String {
        let mut text = format!("{VERSION}\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        text
    }

    fn flush(&self) -> Result<()> {
        let tmp = self.path.with_extension("tmp");
        {
            let mut file = File::create(&tmp)?;
            file.write_all(self.checkpoint_text().as_bytes())?;
            file.sync_all()?;
        }
        fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

fn parse(text: &str) -> std::result::Result<Vec<EpochEntry>, String> {
    let mut lines = text.lines();
    let version: i32 = number(lines.next(), "version")?;
    if version != VERSION {
        return Err(format!("unknown version {version}"));
    }
    let count: usize = number(lines.next(), "entry count")?;
    let mut entries = Vec::with_capacity(count.min(1 << 16));
    for line in lines.by_ref().take(count) {
        let mut fields = line.split(' ');
        let (Some(epoch), Some(offset), None) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("malformed line {line:?}"));
        };
        let entry = EpochEntry {
            epoch: number(Some(epoch), "epoch")?,
            start_offset: number(Some(offset), "start offset")?,
        };
        if entries.last().is_some_and(|p: &EpochEntry| {
            p.epoch >= entry.epoch || p.start_offset > entry.start_offset
        }) {
            return Err(format!("entry {line:?} is out of order"));
        }
        entries.push(entry);
    }
    if entries.len() != count {
        return Err(format!("expected {count} entries, found {}", entries.len()));
    }
    if lines.any(|l| !l.is_empty()) {
        return Err("lines after the last entry".into());
    }
    Ok(entries)
}

fn number<T: std::str::FromStr>(line: Option<&str>, what: &str) -> std::result::Result<T, String> {
    let line = line.ok_or_else(|| format!("missing {what}"))?;
    line.parse().map_err(|_| format!("bad {what} {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_text(dir: &Path) -> String {
        fs::read_to_string(dir.join(CHECKPOINT_FILE)).unwrap()
    }

    #[test]
    fn writes_kafkas_exact_text_and_reloads_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        assert!(!dir.path().join(CHECKPOINT_FILE).exists());
        assert!(cache.assign(0, 0).unwrap());
        assert_eq!(file_text(dir.path()), "0\n1\n0 0\n");
        // Same epoch again: nothing to record.
        assert!(!cache.assign(0, 40).unwrap());
        assert!(cache.assign(1, 150).unwrap());
        assert!(cache.assign(3, 420).unwrap());
        assert_eq!(file_text(dir.path()), "0\n3\n0 0\n1 150\n3 420\n");
        assert!(!dir.path().join("leader-epoch-checkpoint.tmp").exists());
        let reloaded = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(reloaded.entries(), cache.entries());
        assert_eq!(reloaded.latest_epoch(), Some(3));
    }

    #[test]
    fn loads_a_file_written_by_kafka() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CHECKPOINT_FILE), "0\n2\n0 0\n5 1024\n").unwrap();
        let cache = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(
            cache.entries(),
            &[
                EpochEntry {
                    epoch: 0,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 5,
                    start_offset: 1024
                }
            ]
        );
    }

    #[test]
    fn refuses_malformed_files() {
        for text in [
            "1\n0\n",
            "0\n2\n0 0\n",
            "0\n1\n0\n",
            "0\n1\n0 0 0\n",
            "0\n2\n3 10\n2 20\n",
            "0\nx\n",
            "",
            "0\n1\n0 0\n1 5\n",
        ] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(CHECKPOINT_FILE), text).unwrap();
            assert!(LeaderEpochCache::open(dir.path()).is_err(), "{text:?}");
        }
    }

    #[test]
    fn assign_drops_contradicted_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        cache.assign(1, 10).unwrap();
        cache.assign(2, 20).unwrap();
        cache.assign(4, 40).unwrap();
        // A lower epoch starting before epoch 4: epoch 4 goes, as in Kafka.
        cache.assign(3, 30).unwrap();
        assert_eq!(file_text(dir.path()), "0\n3\n1 10\n2 20\n3 30\n");
        // The same epoch at a lower offset replaces it.
        cache.assign(3, 25).unwrap();
        assert_eq!(file_text(dir.path()), "0\n3\n1 10\n2 20\n3 25\n");
        // Negative epochs (no leader) are ignored.
        assert!(!cache.assign(-1, 50).unwrap());
    }

    #[test]
    fn truncation_from_end_and_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        for (epoch, offset) in [(0, 0), (1, 100), (2, 200), (3, 300)] {
            cache.assign(epoch, offset).unwrap();
        }
        cache.truncate_from_end(250).unwrap();
        assert_eq!(file_text(dir.path()), "0\n3\n0 0\n1 100\n2 200\n");
        cache.truncate_from_end(200).unwrap();
        assert_eq!(file_text(dir.path()), "0\n2\n0 0\n1 100\n");
        cache.truncate_from_start(150).unwrap();
        assert_eq!(file_text(dir.path()), "0\n1\n1 150\n");
        // Below the first entry: nothing to do.
        cache.truncate_from_start(10).unwrap();
        assert_eq!(file_text(dir.path()), "0\n1\n1 150\n");
        cache.clear().unwrap();
        assert_eq!(file_text(dir.path()), "0\n0\n");
        assert_eq!(
            LeaderEpochCache::open(dir.path()).unwrap().latest_epoch(),
            None
        );
    }

    #[test]
    fn end_offset_for_follows_kafka() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(cache.end_offset_for(0, 0), UNDEFINED);
        for (epoch, offset) in [(1, 10), (3, 30), (5, 50)] {
            cache.assign(epoch, offset).unwrap();
        }
        // The latest epoch ends at the log end.
        assert_eq!(cache.end_offset_for(5, 77), (5, 77));
        // A known earlier epoch ends where the next one starts.
        assert_eq!(cache.end_offset_for(3, 77), (3, 50));
        // An epoch between entries answers with the one below it.
        assert_eq!(cache.end_offset_for(4, 77), (3, 50));
        // Older than every entry: the requested epoch, ending at the first start.
        assert_eq!(cache.end_offset_for(0, 77), (0, 10));
        // Newer than every entry, or undefined: unknown.
        assert_eq!(cache.end_offset_for(6, 77), UNDEFINED);
        assert_eq!(cache.end_offset_for(-1, 77), UNDEFINED);
    }
}
