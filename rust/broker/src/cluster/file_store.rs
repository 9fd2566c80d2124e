//! The single-node metadata store: `<metadata log dir>/.kafkalite/topics.json`, holding the
//! cluster id, the next producer id and each topic's id, partition count and config
//! overrides. Rewritten whole and atomically (temp file + rename) on every change. A
//! controller replaces this as the source of topics in multi-broker mode.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One topic as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub id: uuid::Uuid,
    pub partitions: i32,
    pub configs: BTreeMap<String, String>,
}

/// The whole file. Field names are the file format: existing data dirs must keep loading.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMetadata {
    pub cluster_id: String,
    pub next_producer_id: i64,
    pub topics: BTreeMap<String, TopicRecord>,
}

/// The dir in the metadata log dir that marks it (and holds `topics.json`); see
/// `BrokerConfig::metadata_dir`.
pub const METADATA_SUBDIR: &str = ".kafkalite";

pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// The store of a broker whose metadata log dir (`BrokerConfig::metadata_dir`) is
    /// `log_dir`.
    #[must_use]
    pub fn in_log_dir(log_dir: &Path) -> FileStore {
        FileStore {
            path: log_dir.join(METADATA_SUBDIR).join("topics.json"),
        }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was stored; empty (no cluster id yet) for a new data dir.
    pub fn load(&self) -> anyhow::Result<StoredMetadata> {
        match fs::read(&self.path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoredMetadata::default()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn save(&self, metadata: &StoredMetadata) -> anyhow::Result<()> {
        write_atomically(&self.path, &serde_json::to_vec_pretty(metadata)?)?;
        Ok(())
    }
}

/// A new cluster id as Kafka makes them: 22 characters of base64url from a random UUID.
#[must_use]
pub fn new_cluster_id() -> String {
    let id = uuid::Uuid::new_v4();
    let mut s = String::with_capacity(22);
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits: u128 = id.as_u128();
    for _ in 0..22 {
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    s
}

/// Temp file, fsync, rename, fsync of the dir: the metadata is the commit point of topic
/// creation and deletion (see `partition_dirs`), so it must be on disk before the data
/// dirs change after it. Other stores the broker answers for (group configs, client-metrics
/// subscriptions, quotas) write through it too.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o666)
}

/// As [`write_atomically`], readable by the broker's user only: for stores that hold
/// secrets (keystore passwords in dynamic configs, SCRAM credentials).
pub(crate) fn write_private_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o600)
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let parent = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    fs::File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `topics.json` as earlier kafkalite versions wrote it.
    const EXISTING: &str = r#"{
  "cluster_id": "q1Sh-9_3TzS2yPmYBUq3kA",
  "next_producer_id": 1003,
  "topics": {
    "__consumer_offsets": {
      "id": "0b6f4bd2-52c6-4cc4-9f5d-0ac0f1a8f9c2",
      "partitions": 50,
      "configs": {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600"
      }
    },
    "orders": {
      "id": "5d0c3a8e-8f43-4b1e-a3a5-2f8d3c9e7b10",
      "partitions": 3,
      "configs": {}
    }
  }
}"#;

    #[test]
    fn loads_an_existing_file_and_writes_it_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::in_log_dir(dir.path());
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(store.path(), EXISTING).unwrap();
        let meta = store.load().unwrap();
        assert_eq!(meta.cluster_id, "q1Sh-9_3TzS2yPmYBUq3kA");
        assert_eq!(meta.next_producer_id, 1003);
        let orders = &meta.topics["orders"];
        assert_eq!(orders.partitions, 3);
        assert_eq!(
            orders.id.to_string(),
            "5d0c3a8e-8f43-4b1e-a3a5-2f8d3c9e7b10"
        );
        assert_eq!(
            meta.topics["__consumer_offsets"].configs["cleanup.policy"],
            "compact"
        );
        store.save(&meta).unwrap();
        assert_eq!(fs::read_to_string(store.path()).unwrap(), EXISTING);
        assert!(!store.path().with_extension("tmp").exists());
        assert_eq!(store.load().unwrap(), meta);
    }

    #[test]
    fn a_new_data_dir_has_nothing_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::in_log_dir(dir.path());
        assert_eq!(store.load().unwrap(), StoredMetadata::default());
        fs::create_dir_all(store.path().parent().unwrap()).unwrap();
        fs::write(store.path(), "{not json").unwrap();
        assert!(store.load().is_err());
    }

    #[test]
    fn cluster_ids_look_like_kafkas() {
        let id = new_cluster_id();
        assert_eq!(id.len(), 22);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(id, new_cluster_id());
    }
}
