//! Transactions as a partition sees them: which producers have an open transaction here
//! (and from which offset, which bounds the last stable offset), and which transactions
//! were aborted (Kafka's `.txnindex`, one file per segment), so read_committed fetchers
//! can drop aborted records themselves while the data stays zero-copy.
//!
//! `.txnindex` entries are Kafka's `AbortedTxn` (34 bytes, big-endian): version INT16 (0),
//! producer id INT64, first offset INT64, last offset INT64 (the abort marker's offset),
//! last stable offset INT64 (the partition's LSO once the marker was written). An entry
//! goes to the file of the segment that holds its marker, `<20-digit base>.txnindex`.
//!
//! Recovery (`open`): the files of the segments that exist are loaded (files of segments
//! that are gone are removed, entries past the log end dropped), then the tail of the log
//! (the window `producer_state::rebuild` replays) is scanned for transactional batches and
//! markers: open transactions come back, and aborts whose marker lies past the last indexed
//! one (lost with an unclean shutdown) are indexed again. A transaction that began before
//! that window and is still open is not seen: its data counts as stable (the coordinator
//! aborts it within `transaction.max.timeout.ms`, the window's length by default).
//!
//! The caller (`Partition`) updates this under the log lock, before the high watermark
//! moves, so no reader sees a transactional batch's offsets before they count as unstable.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::records::batch::{crc32c, ATTR_CONTROL, ATTR_TRANSACTIONAL};
use crate::records::{
    decode_records, encode_producer_batch, BatchHeader, BatchProducer, Compression, RecordInput,
};
use crate::storage::files::remove_if_exists;
use crate::storage::log::PartitionLog;
use crate::storage::producer_state::{rebuild_start, replay_headers};
use crate::storage::segment::file_stem;

pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Bytes of one `AbortedTxn` entry.
pub const ENTRY_LEN: usize = 34;
/// Control record types (the key's second INT16).
pub const CONTROL_ABORT: i16 = 0;
pub const CONTROL_COMMIT: i16 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    #[must_use]
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0..2].copy_from_slice(&0i16.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    /// `None` for an entry of an unknown version (Kafka refuses those too).
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<AbortedTxn> {
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        if b.len() < ENTRY_LEN || i16::from_be_bytes([b[0], b[1]]) != 0 {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// A COMMIT or ABORT marker of `producer_id`'s transaction, as the coordinator writes it:
/// a transactional control batch of one record, key (version 0, type), value (version 0,
/// coordinator epoch), base sequence -1.
pub fn marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    timestamp: i64,
) -> Result<Vec<u8>> {
    let kind = if commit {
        CONTROL_COMMIT
    } else {
        CONTROL_ABORT
    };
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = 0i16.to_be_bytes().to_vec();
    value.extend_from_slice(&coordinator_epoch.to_be_bytes());
    let record = RecordInput {
        timestamp,
        key: Some(key),
        value: Some(value),
        headers: Vec::new(),
    };
    let producer = BatchProducer {
        id: producer_id,
        epoch: producer_epoch,
        base_sequence: -1,
    };
    let mut b = encode_producer_batch(&[record], Compression::None, 0, producer)?;
    b[21..23].copy_from_slice(&(ATTR_TRANSACTIONAL | ATTR_CONTROL).to_be_bytes());
    let crc = crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(b)
}

/// A transactional data batch of `producer_id`/`producer_epoch` (base sequence -1: the
/// coordinators' own writes, such as transactional offset commits in `__consumer_offsets`,
/// are not idempotent batches), as Kafka's group coordinator writes TxnOffsetCommit.
pub fn transactional_batch(
    records: &[RecordInput],
    producer_id: i64,
    producer_epoch: i16,
    compression: Compression,
) -> Result<Vec<u8>> {
    let producer = BatchProducer {
        id: producer_id,
        epoch: producer_epoch,
        base_sequence: -1,
    };
    let mut b = encode_producer_batch(records, compression, 0, producer)?;
    let attributes = i16::from_be_bytes([b[21], b[22]]) | ATTR_TRANSACTIONAL;
    b[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(b)
}

/// The control record type of a control batch (`batch` holds the whole batch).
#[must_use]
pub fn control_type(batch: &[u8]) -> Option<i16> {
    let records = decode_records(batch).ok()?;
    let key = records.first()?.key.as_ref()?;
    (key.len() >= 4).then(|| i16::from_be_bytes([key[2], key[3]]))
}

#[derive(Debug)]
pub struct TxnIndex {
    dir: PathBuf,
    /// Open transactions: producer id -> offset of its first batch in this partition.
    ongoing: BTreeMap<i64, i64>,
    /// Aborted transactions, by marker offset (ascending), with the segment holding it.
    aborted: Vec<(i64, AbortedTxn)>,
    /// The coordinator epoch of each producer's last marker written since open: markers
    /// from an older coordinator are fenced (Kafka's TRANSACTION_COORDINATOR_FENCED).
    coordinator_epochs: std::collections::HashMap<i64, i32>,
}

fn index_path(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{}{TXN_INDEX_SUFFIX}", file_stem(base)))
}

impl TxnIndex {
    /// Keep the `.txnindex` files in `dir` from now on (the partition's files were moved
    /// there); what is in memory stays.
    pub fn relocate(&mut self, dir: impl AsRef<Path>) {
        self.dir = dir.as_ref().to_path_buf();
    }

    /// Load the segments' `.txnindex` files and replay the log's tail (module docs).
    pub fn open(log: &PartitionLog) -> Result<TxnIndex> {
        let dir = log.dir().to_path_buf();
        let bases = log.segment_base_offsets();
        let end = log.log_end_offset();
        let mut index = TxnIndex {
            dir: dir.clone(),
            ongoing: BTreeMap::new(),
            aborted: Vec::new(),
            coordinator_epochs: std::collections::HashMap::new(),
        };
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(TXN_INDEX_SUFFIX)) else {
                continue;
            };
            let Ok(base) = stem.parse::<i64>() else {
                continue;
            };
            if !bases.contains(&base) {
                remove_if_exists(&entry.path())?;
                continue;
            }
            let bytes = fs::read(entry.path())?;
            let entries: Vec<AbortedTxn> = bytes
                .chunks_exact(ENTRY_LEN)
                .map_while(AbortedTxn::decode)
                .collect();
            let kept: Vec<AbortedTxn> = entries
                .iter()
                .copied()
                .filter(|e| e.last_offset < end)
                .collect();
            if kept.len() != entries.len() || bytes.len() != kept.len() * ENTRY_LEN {
                rewrite(&entry.path(), &kept)?;
            }
            index.aborted.extend(kept.into_iter().map(|e| (base, e)));
        }
        index.aborted.sort_by_key(|(_, e)| e.last_offset);
        index.replay_tail(log)?;
        Ok(index)
    }

    fn replay_tail(&mut self, log: &PartitionLog) -> Result<()> {
        let from = rebuild_start(log, crate::storage::clock::now_ms());
        let last_indexed = self.aborted.last().map_or(-1, |(_, e)| e.last_offset);
        // Transactional headers in offset order; marker types are read afterwards (the
        // header walk holds no record bytes).
        let mut txn_headers = Vec::new();
        replay_headers(log, from, |h| {
            if h.is_transactional() {
                txn_headers.push(h.clone());
            }
        })?;
        let mut bases = log.segment_base_offsets();
        bases.reverse();
        for h in txn_headers {
            if !h.is_control() {
                self.ongoing.entry(h.producer_id).or_insert(h.base_offset);
                continue;
            }
            let first = self.ongoing.remove(&h.producer_id).unwrap_or(from);
            if h.base_offset <= last_indexed
                || read_control_type(log, h.base_offset)? != Some(CONTROL_ABORT)
            {
                continue;
            }
            let base = bases
                .iter()
                .copied()
                .find(|b| *b <= h.base_offset)
                .unwrap_or(0);
            let entry = AbortedTxn {
                producer_id: h.producer_id,
                first_offset: first,
                last_offset: h.base_offset,
                last_stable_offset: h.base_offset + 1,
            };
            self.aborted.push((base, entry));
            append_entry(&index_path(&self.dir, base), &entry)?;
        }
        Ok(())
    }

    /// A transactional data batch was appended at `first_offset`.
    pub fn on_data(&mut self, producer_id: i64, first_offset: i64) {
        self.ongoing.entry(producer_id).or_insert(first_offset);
    }

    /// A marker was appended at `offset` in the segment based at `segment_base`; an abort
    /// is indexed with `lso_after` as its last stable offset.
    pub fn on_marker(
        &mut self,
        producer_id: i64,
        offset: i64,
        abort: bool,
        segment_base: i64,
    ) -> Result<()> {
        let Some(first) = self.ongoing.remove(&producer_id) else {
            return Ok(());
        };
        if abort {
            let entry = AbortedTxn {
                producer_id,
                first_offset: first,
                last_offset: offset,
                last_stable_offset: self.first_unstable().unwrap_or(offset + 1),
            };
            self.aborted.push((segment_base, entry));
            append_entry(&index_path(&self.dir, segment_base), &entry)?;
        }
        Ok(())
    }

    /// Remember the coordinator epoch of a marker of `producer_id`.
    pub fn note_coordinator_epoch(&mut self, producer_id: i64, epoch: i32) {
        let known = self.coordinator_epochs.entry(producer_id).or_insert(epoch);
        *known = (*known).max(epoch);
    }

    /// The coordinator epoch of `producer_id`'s last marker, if one was written since open.
    #[must_use]
    pub fn coordinator_epoch(&self, producer_id: i64) -> Option<i32> {
        self.coordinator_epochs.get(&producer_id).copied()
    }

    /// Offset of the earliest open transaction's first batch (the LSO when below the HW).
    #[must_use]
    pub fn first_unstable(&self) -> Option<i64> {
        self.ongoing.values().copied().min()
    }

    /// Open transactions: (producer id, first offset).
    #[must_use]
    pub fn ongoing(&self) -> Vec<(i64, i64)> {
        self.ongoing.iter().map(|(p, o)| (*p, *o)).collect()
    }

    /// Aborted transactions a fetch of `[from, to)` needs: those whose data may lie in
    /// that range, as (producer id, first offset).
    #[must_use]
    pub fn aborted_between(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        let start = self.aborted.partition_point(|(_, e)| e.last_offset < from);
        self.aborted[start..]
            .iter()
            .filter(|(_, e)| e.first_offset < to)
            .map(|(_, e)| (e.producer_id, e.first_offset))
            .collect()
    }

    /// Every aborted transaction: (producer id, first offset, marker offset), for the
    /// cleaner.
    #[must_use]
    pub fn aborted_ranges(&self) -> Vec<(i64, i64, i64)> {
        self.aborted
            .iter()
            .map(|(_, e)| (e.producer_id, e.first_offset, e.last_offset))
            .collect()
    }

    /// The log lost everything from `end` on (truncation).
    pub fn truncate_to(&mut self, end: i64) -> Result<()> {
        self.ongoing.retain(|_, first| *first < end);
        let before = self.aborted.len();
        self.aborted.retain(|(_, e)| e.last_offset < end);
        if before != self.aborted.len() {
            self.rewrite_all()?;
        }
        Ok(())
    }

    /// Segments below the log start were deleted: drop their files and entries.
    pub fn retain_segments(&mut self, bases: &[i64]) -> Result<()> {
        let gone: Vec<i64> = self
            .aborted
            .iter()
            .map(|(b, _)| *b)
            .filter(|b| !bases.contains(b))
            .collect();
        for base in &gone {
            remove_if_exists(&index_path(&self.dir, *base))?;
        }
        self.aborted.retain(|(b, _)| bases.contains(b));
        Ok(())
    }

    fn rewrite_all(&self) -> Result<()> {
        let mut by_base: BTreeMap<i64, Vec<AbortedTxn>> = BTreeMap::new();
        for (base, e) in &self.aborted {
            by_base.entry(*base).or_default().push(*e);
        }
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.to_string_lossy().ends_with(TXN_INDEX_SUFFIX) {
                remove_if_exists(&path)?;
            }
        }
        for (base, entries) in by_base {
            rewrite(&index_path(&self.dir, base), &entries)?;
        }
        Ok(())
    }
}

fn read_control_type(log: &PartitionLog, offset: i64) -> Result<Option<i16>> {
    let Some(slice) = log.read(offset, 1024, Some(offset + 1))? else {
        return Ok(None);
    };
    let mut buf = vec![0u8; slice.len.min(1024) as usize];
    slice.file.read_exact_at(&mut buf, slice.position)?;
    let Ok(header) = BatchHeader::parse(&buf) else {
        return Ok(None);
    };
    Ok(buf
        .get(..header.total_size())
        .and_then(control_type)
        .filter(|_| header.is_control()))
}

fn append_entry(path: &Path, entry: &AbortedTxn) -> Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(&entry.encode())?;
    Ok(())
}

fn rewrite(path: &Path, entries: &[AbortedTxn]) -> Result<()> {
    let tmp = path.with_extension("txnindex.tmp");
    let mut file = File::create(&tmp)?;
    for e in entries {
        file.write_all(&e.encode())?;
    }
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
#[path = "txn_index_tests.rs"]
mod tests;
