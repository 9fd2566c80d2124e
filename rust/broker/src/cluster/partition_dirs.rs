//! Partition directories on disk and their lifecycle, crash-safe as Kafka's:
//!
//! - every partition dir holds `partition.metadata` (Kafka's file: format version and the
//!   topic id), so a dir left by an earlier topic of the same name is never taken for the
//!   new one's;
//! - a deleted partition's dir is first renamed to `<topic>-<partition>.<id hex>-delete`
//!   (Kafka's name), which frees its name at once, then removed in the background;
//! - at start, `clean` finishes every `-delete` dir, removes every `-future` dir (an
//!   unfinished move between log dirs) and retires the partition dirs that belong to no
//!   stored topic (a crash between a metadata write and the data change).
//!
//! The metadata file (`topics.json`) is the commit point: it is written before dirs are
//! retired on delete and after they are created on create, so every crash leaves either
//! orphans (cleaned at start) or a topic whose dirs are all present.
//!
//! A cluster snapshot may bring thousands of new partitions at once; each new dir costs
//! three fsyncs (its metadata file, the dir, the log dir), which one after another are
//! seconds on any disk. `with_batched_syncs` defers them to the end of its work and runs
//! them side by side (the filesystem's journal commits concurrent fsyncs together). A crash
//! before then leaves a dir whose metadata file is empty or missing, which the next open
//! writes again.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use kafkalite_core::logging;

use super::file_store::TopicRecord;

const LOGGER: &str = "kafkalite.cluster.PartitionDirs";

/// Kafka's name for the file naming a partition dir's topic id.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// Kafka's suffix of a partition dir awaiting deletion.
pub const DELETE_SUFFIX: &str = "-delete";

/// Kafka's suffix of a future replica's dir: the copy a move to another log dir is making
/// (`replica_move`).
pub const FUTURE_SUFFIX: &str = "-future";

/// A topic id as Kafka prints it (`Uuid.toString`): base64url of its 16 bytes, unpadded.
#[must_use]
pub fn kafka_uuid_string(id: uuid::Uuid) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let mut n = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            n |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn metadata_text(id: uuid::Uuid) -> String {
    format!("version: 0\ntopic_id: {}\n", kafka_uuid_string(id))
}

/// The topic id written in `dir`'s `partition.metadata`, if the file is there and readable.
fn stored_id(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join(PARTITION_METADATA_FILE)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("topic_id:"))
        .map(|id| id.trim().to_string())
}

/// Get `dir` ready to hold a partition of topic `id`. A dir holding another topic's data is
/// retired first (renamed to `-delete`, removed later). With `fresh` (a topic or partition
/// being created now) any existing dir is another topic's, even without a metadata file;
/// otherwise a dir without one is an earlier kafkalite's and is adopted.
pub fn prepare(
    dir: &Path,
    topic: &str,
    index: i32,
    id: uuid::Uuid,
    fresh: bool,
) -> std::io::Result<()> {
    if dir.exists() {
        let ours = match stored_id(dir) {
            Some(stored) => stored == kafka_uuid_string(id),
            None => !fresh,
        };
        if ours {
            // Missing, or left empty by a crash before a batch's fsyncs.
            if stored_id(dir).is_none() {
                write_metadata(dir, id)?;
            }
            return Ok(());
        }
        logging::warn(
            LOGGER,
            &format!(
                "{} holds data of another topic named {topic}; retiring it",
                dir.display()
            ),
        );
        let retired = retire(dir, topic, index)?;
        remove_in_background(vec![retired]);
    }
    fs::create_dir_all(dir)?;
    write_metadata(dir, id)?;
    sync_dir(dir.parent().unwrap_or(dir));
    Ok(())
}

thread_local! {
    /// Set by `with_batched_syncs`: the files and dirs whose fsync waits for its end.
    static DEFERRED: RefCell<Option<BTreeSet<PathBuf>>> = const { RefCell::new(None) };
}

/// Parallel fsyncs at the end of a batch: enough to keep a journal's commits full.
const SYNC_THREADS: usize = 16;

/// Run `work` with the fsyncs of the partition dirs it prepares deferred to its end, then
/// run them side by side (each path once).
pub fn with_batched_syncs<T>(work: impl FnOnce() -> T) -> T {
    let outer = DEFERRED.with(|d| d.borrow().is_some());
    if outer {
        return work();
    }
    DEFERRED.with(|d| *d.borrow_mut() = Some(BTreeSet::new()));
    let out = work();
    let paths: Vec<PathBuf> = DEFERRED
        .with(|d| d.borrow_mut().take())
        .unwrap_or_default()
        .into_iter()
        .collect();
    sync_all_of(&paths);
    out
}

/// fsync every path (a file or a dir), several threads at a time; best effort, as
/// `sync_dir`.
fn sync_all_of(paths: &[PathBuf]) {
    if paths.is_empty() {
        return;
    }
    let per_thread = paths.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        for chunk in paths.chunks(per_thread) {
            scope.spawn(move || {
                for path in chunk {
                    sync_dir(path);
                }
            });
        }
    });
}

/// Defer `path`'s fsync to the batch's end; false outside a batch (sync it now).
fn defer(path: &Path) -> bool {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(set) => {
            set.insert(path.to_path_buf());
            true
        }
        None => false,
    })
}

fn write_metadata(dir: &Path, id: uuid::Uuid) -> std::io::Result<()> {
    let path = dir.join(PARTITION_METADATA_FILE);
    if defer(&path) {
        // In a batch the file goes straight to its name and is synced at the end with
        // its dir; until then a crash may leave it empty, and `prepare` writes it again.
        fs::write(&path, metadata_text(id))?;
        defer(dir);
        return Ok(());
    }
    let tmp = dir.join(format!("{PARTITION_METADATA_FILE}.tmp"));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(metadata_text(id).as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, &path)?;
    sync_dir(dir);
    Ok(())
}

/// Rename a partition dir to `<topic>-<index>.<random hex>-delete` in the same log dir
/// (a new random id each time, so retiring twice never collides) and return the new path.
pub fn retire(dir: &Path, topic: &str, index: i32) -> std::io::Result<PathBuf> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let target = parent.join(format!(
        "{topic}-{index}.{}{DELETE_SUFFIX}",
        uuid::Uuid::new_v4().simple()
    ));
    fs::rename(dir, &target)?;
    sync_dir(parent);
    Ok(target)
}

/// Remove retired dirs on a thread of their own (a big partition takes a while); what a
/// crash interrupts, `clean` finishes at the next start.
pub fn remove_in_background(dirs: Vec<PathBuf>) {
    if dirs.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("kafkalite-delete".into())
        .spawn({
            let dirs = dirs.clone();
            move || remove_all(&dirs)
        });
    if spawned.is_err() {
        remove_all(&dirs);
    }
}

fn remove_all(dirs: &[PathBuf]) {
    for dir in dirs {
        if let Err(e) = fs::remove_dir_all(dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                logging::error(LOGGER, &format!("cannot delete {}: {e}", dir.display()));
            }
        }
    }
}

/// `<topic>-<index>` as a partition dir is named, split; `None` for anything else.
fn parse_partition_dir(name: &str) -> Option<(&str, i32)> {
    let (topic, index) = name.rsplit_once('-')?;
    if topic.is_empty() || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((topic, index.parse().ok()?))
}

/// What `clean` did: dirs removed because they were awaiting deletion, and orphan
/// partition dirs (no stored topic, a partition past the topic's count, or another topic's
/// id) that it retired and removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    pub finished: Vec<PathBuf>,
    pub orphans: Vec<PathBuf>,
}

/// At start, before any partition is opened: finish interrupted deletions and remove
/// partition dirs no stored topic owns. Runs synchronously, so the dirs are gone before a
/// topic of the same name can be created.
pub fn clean(log_dirs: &[PathBuf], topics: &BTreeMap<String, TopicRecord>) -> Cleaned {
    let mut cleaned = Cleaned::default();
    for log_dir in log_dirs {
        let Ok(entries) = fs::read_dir(log_dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            // A `-future` dir is the copy of a move to another log dir that did not
            // finish (`replica_move`): the partition is still whole where it was.
            if name.ends_with(DELETE_SUFFIX) || name.ends_with(FUTURE_SUFFIX) {
                cleaned.finished.push(path);
                continue;
            }
            let Some((topic, index)) = parse_partition_dir(&name) else {
                continue;
            };
            let owned = topics.get(topic).is_some_and(|record| {
                index < record.partitions
                    && stored_id(&path).is_none_or(|id| id == kafka_uuid_string(record.id))
            });
            if !owned {
                cleaned.orphans.push(path);
            }
        }
    }
    for path in &cleaned.finished {
        logging::info(LOGGER, &format!("finishing deletion of {}", path.display()));
    }
    for path in &cleaned.orphans {
        logging::warn(
            LOGGER,
            &format!(
                "{} belongs to no topic in the metadata (a create or delete was \
                 interrupted); deleting it",
                path.display()
            ),
        );
    }
    remove_all(&cleaned.finished);
    remove_all(&cleaned.orphans);
    cleaned
}

/// Make a rename or create in `dir` durable (best effort: not every filesystem can);
/// deferred inside `with_batched_syncs`.
pub fn sync_dir(dir: &Path) {
    if defer(dir) {
        return;
    }
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: uuid::Uuid, partitions: i32) -> TopicRecord {
        TopicRecord {
            id,
            partitions,
            configs: BTreeMap::new(),
        }
    }

    #[test]
    fn topic_ids_print_as_kafka_prints_them() {
        // Kafka: new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L).toString()
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(kafka_uuid_string(id), "ASNFZ4mrze_-3LqYdlQyEA");
        assert_eq!(
            kafka_uuid_string(uuid::Uuid::nil()),
            "AAAAAAAAAAAAAAAAAAAAAA"
        );
    }

    #[test]
    fn a_dir_of_another_topic_is_retired_and_ours_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("t-0");
        let (old, new) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        prepare(&dir, "t", 0, old, true).unwrap();
        fs::write(dir.join("00000000000000000000.log"), b"old records").unwrap();
        // Reopening the same topic keeps its data.
        prepare(&dir, "t", 0, old, false).unwrap();
        assert!(dir.join("00000000000000000000.log").exists());
        // A new topic of the same name gets an empty dir.
        prepare(&dir, "t", 0, new, false).unwrap();
        assert!(!dir.join("00000000000000000000.log").exists());
        assert_eq!(stored_id(&dir).unwrap(), kafka_uuid_string(new));
        // A dir without metadata: adopted when reopening, retired when creating.
        fs::remove_file(dir.join(PARTITION_METADATA_FILE)).unwrap();
        fs::write(dir.join("legacy.log"), b"x").unwrap();
        prepare(&dir, "t", 0, new, false).unwrap();
        assert!(dir.join("legacy.log").exists());
        assert_eq!(stored_id(&dir).unwrap(), kafka_uuid_string(new));
        fs::remove_file(dir.join(PARTITION_METADATA_FILE)).unwrap();
        prepare(&dir, "t", 0, new, true).unwrap();
        assert!(!dir.join("legacy.log").exists());
    }

    #[test]
    fn clean_finishes_deletions_and_removes_orphans_only() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let (kept, stale) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        for (root, name, id) in [
            (a.path(), "keep-0", Some(kept)),
            (b.path(), "keep-1", None),
            (a.path(), "keep-2", Some(kept)),
            (b.path(), "keep-3", Some(stale)),
            (a.path(), "gone-0", Some(stale)),
            (a.path(), "keep-0.abc-delete", None),
            (a.path(), ".kafkalite", None),
            (a.path(), "not_a_partition", None),
        ] {
            let dir = root.join(name);
            fs::create_dir_all(&dir).unwrap();
            if let Some(id) = id {
                write_metadata(&dir, id).unwrap();
            }
        }
        let topics = BTreeMap::from([("keep".to_string(), record(kept, 2))]);
        let cleaned = clean(&dirs, &topics);
        assert_eq!(cleaned.finished, [a.path().join("keep-0.abc-delete")]);
        let mut orphans = cleaned.orphans.clone();
        orphans.sort();
        let mut expected = vec![
            a.path().join("gone-0"),
            a.path().join("keep-2"),
            b.path().join("keep-3"),
        ];
        expected.sort();
        assert_eq!(orphans, expected);
        for gone in cleaned.finished.iter().chain(&cleaned.orphans) {
            assert!(!gone.exists(), "{}", gone.display());
        }
        for kept in ["keep-0", ".kafkalite", "not_a_partition"] {
            assert!(a.path().join(kept).exists(), "{kept}");
        }
        assert!(b.path().join("keep-1").exists());
    }
}
