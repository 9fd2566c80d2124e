//! Committed offsets, kept in memory and appended as keyed records to the internal log
//! `__consumer_offsets-0`, replayed at startup. Keys are `group`, `topic`, `partition`, so
//! compaction (when it runs on this log) keeps the latest commit of each.
//!
//! Record format (version 0, our own; Kafka's schemas arrive with the group coordinator):
//! key = [0u8] ++ u16 len ++ group ++ u16 len ++ topic ++ i32 partition,
//! value = i64 offset ++ i32 leader epoch ++ i64 commit time ++ u16 len ++ metadata
//! (len 0xFFFF: null), or null to delete.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use kafkalite_core::records::{decode_records, encode_batch, Compression, RecordInput};
use kafkalite_core::storage::{LogConfig, PartitionLog};

const FORMAT_VERSION: u8 = 0;
const NULL_LEN: u16 = u16::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    pub commit_ms: i64,
}

type Key = (String, String, i32);

pub struct CommittedOffsets {
    log: Mutex<PartitionLog>,
    offsets: Mutex<BTreeMap<Key, Committed>>,
}

impl CommittedOffsets {
    /// Open the internal log under `dir` and replay it.
    pub fn open(dir: &Path) -> anyhow::Result<CommittedOffsets> {
        let log = PartitionLog::open(dir.join("__consumer_offsets-0"), LogConfig::default())?;
        let mut offsets = BTreeMap::new();
        let mut position = log.log_start_offset();
        while let Some(slice) = log.read(position, 4 << 20, None)? {
            let mut buf = vec![0u8; slice.len as usize];
            std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf, slice.position)?;
            let mut rest = &buf[..];
            while rest.len() >= 12 {
                let size = 12 + i32::from_be_bytes(rest[8..12].try_into()?) as usize;
                for record in decode_records(&rest[..size])? {
                    position = record.offset + 1;
                    let Some(key) = record.key.as_deref().and_then(decode_key) else {
                        continue;
                    };
                    match record.value.as_deref().and_then(decode_value) {
                        Some(c) => offsets.insert(key, c),
                        None => offsets.remove(&key),
                    };
                }
                rest = &rest[size..];
            }
            position = position.max(slice.first_offset + 1);
        }
        Ok(CommittedOffsets {
            log: Mutex::new(log),
            offsets: Mutex::new(offsets),
        })
    }

    /// Persist, then publish, a group's commits.
    pub fn commit(
        &self,
        group: &str,
        commits: &[(String, i32, Committed)],
    ) -> kafkalite_core::Result<()> {
        if commits.is_empty() {
            return Ok(());
        }
        let records: Vec<RecordInput> = commits
            .iter()
            .map(|(topic, partition, c)| RecordInput {
                timestamp: c.commit_ms,
                key: Some(encode_key(group, topic, *partition)),
                value: Some(encode_value(c)),
                headers: Vec::new(),
            })
            .collect();
        let batch = encode_batch(&records, Compression::None, 0)?;
        let now = commits[0].2.commit_ms;
        self.log.lock().expect("lock").append_shared(&batch, now)?;
        let mut offsets = self.offsets.lock().expect("lock");
        for (topic, partition, c) in commits {
            offsets.insert((group.to_string(), topic.clone(), *partition), c.clone());
        }
        Ok(())
    }

    #[must_use]
    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<Committed> {
        let key = (group.to_string(), topic.to_string(), partition);
        self.offsets.lock().expect("lock").get(&key).cloned()
    }

    /// Every (topic, partition, commit) of a group.
    #[must_use]
    pub fn of_group(&self, group: &str) -> Vec<(String, i32, Committed)> {
        self.offsets
            .lock()
            .expect("lock")
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, t, p), c)| (t.clone(), *p, c.clone()))
            .collect()
    }

    pub fn close(&self) -> kafkalite_core::Result<()> {
        self.log.lock().expect("lock").close()
    }
}

fn put_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            let bytes = &s.as_bytes()[..s.len().min(usize::from(NULL_LEN) - 1)];
            out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        None => out.extend_from_slice(&NULL_LEN.to_be_bytes()),
    }
}

fn take_str<'a>(buf: &mut &'a [u8]) -> Option<Option<&'a str>> {
    let len = u16::from_be_bytes(buf.get(..2)?.try_into().ok()?);
    *buf = &buf[2..];
    if len == NULL_LEN {
        return Some(None);
    }
    let bytes = buf.get(..usize::from(len))?;
    *buf = &buf[usize::from(len)..];
    Some(Some(std::str::from_utf8(bytes).ok()?))
}

fn take<const N: usize>(buf: &mut &[u8]) -> Option<[u8; N]> {
    let bytes: [u8; N] = buf.get(..N)?.try_into().ok()?;
    *buf = &buf[N..];
    Some(bytes)
}

fn encode_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    put_str(&mut out, Some(group));
    put_str(&mut out, Some(topic));
    out.extend_from_slice(&partition.to_be_bytes());
    out
}

fn decode_key(mut buf: &[u8]) -> Option<Key> {
    let [version] = take::<1>(&mut buf)?;
    if version != FORMAT_VERSION {
        return None;
    }
    let group = take_str(&mut buf)??.to_string();
    let topic = take_str(&mut buf)??.to_string();
    let partition = i32::from_be_bytes(take::<4>(&mut buf)?);
    Some((group, topic, partition))
}

fn encode_value(c: &Committed) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    out.extend_from_slice(&c.offset.to_be_bytes());
    out.extend_from_slice(&c.leader_epoch.to_be_bytes());
    out.extend_from_slice(&c.commit_ms.to_be_bytes());
    put_str(&mut out, c.metadata.as_deref());
    out
}

fn decode_value(mut buf: &[u8]) -> Option<Committed> {
    let offset = i64::from_be_bytes(take::<8>(&mut buf)?);
    let leader_epoch = i32::from_be_bytes(take::<4>(&mut buf)?);
    let commit_ms = i64::from_be_bytes(take::<8>(&mut buf)?);
    let metadata = take_str(&mut buf)?.map(str::to_string);
    Some(Committed {
        offset,
        leader_epoch,
        metadata,
        commit_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_survive_reopen_and_latest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let c = |offset, metadata: Option<&str>| Committed {
            offset,
            leader_epoch: 0,
            metadata: metadata.map(str::to_string),
            commit_ms: 1,
        };
        {
            let store = CommittedOffsets::open(dir.path()).unwrap();
            store
                .commit(
                    "g",
                    &[
                        ("t".into(), 0, c(5, Some("m"))),
                        ("t".into(), 1, c(7, None)),
                    ],
                )
                .unwrap();
            store
                .commit("g", &[("t".into(), 0, c(9, Some("later")))])
                .unwrap();
            store
                .commit("other", &[("t".into(), 0, c(1, None))])
                .unwrap();
            store.close().unwrap();
        }
        let store = CommittedOffsets::open(dir.path()).unwrap();
        assert_eq!(store.get("g", "t", 0), Some(c(9, Some("later"))));
        assert_eq!(store.get("g", "t", 1), Some(c(7, None)));
        assert_eq!(store.of_group("g").len(), 2);
        assert_eq!(store.get("g", "t", 2), None);
    }

    #[test]
    fn garbage_keys_and_values_are_skipped() {
        assert_eq!(decode_key(&[0, 0, 9]), None);
        assert_eq!(decode_key(&[1]), None);
        assert_eq!(decode_value(&[0; 5]), None);
    }
}
