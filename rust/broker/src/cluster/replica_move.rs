//! Moving a partition to another of the broker's log dirs (AlterReplicaLogDirs), the way
//! Kafka's future replica does, while the partition keeps serving:
//!
//! 1. its files are copied to `<dest log dir>/<topic>-<index>.<random hex>-future`, each
//!    made durable, without the partition's lock;
//! 2. under the log lock (appends wait only for this step): once no compaction is under
//!    way, the log is closed, whatever changed since step 1 is copied again (a grown file
//!    by its tail, a rewritten one whole), the copy is renamed into place and opened, and
//!    the old dir is retired (renamed to `-delete`, removed in the background).
//!
//! A crash in step 1 or 2 leaves a `-future` dir, which the next start removes
//! (`partition_dirs::clean`); a crash between the rename and the retirement leaves two
//! identical copies, and `log_dir_placement` keeps the one the move wrote.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafkalite_core::logging;
use kafkalite_core::storage::PartitionLog;

use super::log_dir_placement::partition_dir_name;
use super::partition::Partition;
use super::partition_dirs::{self, FUTURE_SUFFIX};

const LOGGER: &str = "kafkalite.cluster.ReplicaMove";

/// How long the last step waits for a running compaction before it gives up.
const COMPACTION_WAIT: Duration = Duration::from_secs(600);

/// The moves under way on this broker, by partition.
#[derive(Default)]
pub struct Moves {
    running: Mutex<BTreeMap<(String, i32), Arc<Move>>>,
}

/// One move: where it is copying to, and where it is wanted now (a second request for
/// another dir redirects it, as in Kafka).
pub struct Move {
    future: Mutex<PathBuf>,
    wanted: Mutex<PathBuf>,
    /// The source's log end when the current copy began: the copy holds at least that.
    copied_from_end: Mutex<i64>,
}

/// A future replica as DescribeLogDirs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Future {
    pub log_dir: PathBuf,
    pub size: u64,
    pub copied_from_end: i64,
}

/// What a move request found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// The partition is already in that log dir and no move is under way.
    AlreadyThere,
    /// A move to that dir was started, redirected there, or was already going there.
    Moving,
}

impl Moves {
    /// The future replica of a partition being moved, if any.
    #[must_use]
    pub fn future(&self, topic: &str, index: i32) -> Option<Future> {
        let moving = self
            .running
            .lock()
            .expect("lock")
            .get(&(topic.to_string(), index))
            .cloned()?;
        let future = moving.future.lock().expect("lock").clone();
        let copied_from_end = *moving.copied_from_end.lock().expect("lock");
        Some(Future {
            log_dir: future.parent()?.to_path_buf(),
            size: dir_size(&future),
            copied_from_end,
        })
    }

    /// Move `partition` into `dest_log_dir` (one of the broker's log dirs, checked by the
    /// caller), on a thread of its own.
    pub fn request(
        self: &Arc<Self>,
        partition: &Arc<Partition>,
        dest_log_dir: &Path,
    ) -> io::Result<Requested> {
        let key = (partition.topic.clone(), partition.index);
        let mut running = self.running.lock().expect("lock");
        if let Some(moving) = running.get(&key) {
            *moving.wanted.lock().expect("lock") = dest_log_dir.to_path_buf();
            return Ok(Requested::Moving);
        }
        if partition.dir().parent() == Some(dest_log_dir) {
            return Ok(Requested::AlreadyThere);
        }
        let moving = Arc::new(Move {
            future: Mutex::new(future_dir(dest_log_dir, partition)),
            wanted: Mutex::new(dest_log_dir.to_path_buf()),
            copied_from_end: Mutex::new(partition.log_end_offset()),
        });
        running.insert(key.clone(), Arc::clone(&moving));
        drop(running);
        let (moves, partition, done) = (Arc::clone(self), Arc::clone(partition), key.clone());
        let spawned = std::thread::Builder::new()
            .name("kafkalite-replica-move".into())
            .spawn(move || {
                let what = format!("{}-{}", partition.topic, partition.index);
                match run(&partition, &moving) {
                    Ok(Some(dir)) => {
                        logging::info(LOGGER, &format!("moved {what} to {}", dir.display()));
                    }
                    Ok(None) => logging::info(
                        LOGGER,
                        &format!("move of {what} stopped: its log was closed"),
                    ),
                    Err(e) => logging::error(LOGGER, &format!("cannot move {what}: {e}")),
                }
                moves.running.lock().expect("lock").remove(&done);
            });
        if let Err(e) = spawned {
            self.running.lock().expect("lock").remove(&key);
            return Err(e);
        }
        Ok(Requested::Moving)
    }

    /// Whether any move is under way (tests, and shutdown's wait).
    #[must_use]
    pub fn any_running(&self) -> bool {
        !self.running.lock().expect("lock").is_empty()
    }
}

fn future_dir(dest_log_dir: &Path, partition: &Partition) -> PathBuf {
    dest_log_dir.join(format!(
        "{}.{}{FUTURE_SUFFIX}",
        partition_dir_name(&partition.topic, partition.index),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Copy, then swap; redirected moves start over in their new dir. `Ok(None)`: the
/// partition's log was closed meanwhile (topic deleted, broker stopping).
fn run(partition: &Partition, moving: &Move) -> io::Result<Option<PathBuf>> {
    loop {
        let future = moving.future.lock().expect("lock").clone();
        let result = copy_then_swap(partition, moving, &future);
        let wanted = moving.wanted.lock().expect("lock").clone();
        match result {
            Ok(Swap::Done(dir)) => return Ok(Some(dir)),
            Ok(Swap::Closed) => {
                let _ = fs::remove_dir_all(&future);
                return Ok(None);
            }
            Ok(Swap::Redirected) => {
                let _ = fs::remove_dir_all(&future);
                if partition.dir().parent() == Some(wanted.as_path()) {
                    return Ok(Some(partition.dir()));
                }
                *moving.future.lock().expect("lock") = future_dir(&wanted, partition);
                *moving.copied_from_end.lock().expect("lock") = partition.log_end_offset();
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&future);
                return Err(e);
            }
        }
    }
}

enum Swap {
    Done(PathBuf),
    Closed,
    Redirected,
}

fn copy_then_swap(partition: &Partition, moving: &Move, future: &Path) -> io::Result<Swap> {
    let dest_log_dir = future.parent().unwrap_or(future).to_path_buf();
    fs::create_dir_all(future)?;
    let copied = copy_all(&partition.dir(), future)?;
    let deadline = Instant::now() + COMPACTION_WAIT;
    loop {
        let mut log = partition.log.lock().expect("lock");
        if log.is_closed() {
            return Ok(Swap::Closed);
        }
        if *moving.wanted.lock().expect("lock") != dest_log_dir {
            return Ok(Swap::Redirected);
        }
        if log.cleaner_running() {
            drop(log);
            if Instant::now() > deadline {
                return Err(io::Error::other(
                    "a compaction of the partition kept running for 10 minutes",
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        return swap(partition, &mut log, future, &copied).map(Swap::Done);
    }
}

/// What step 1 copied: each file's inode, the bytes copied, and its change time when listed.
type Copied = BTreeMap<String, (u64, u64, i64, i64)>;

fn stamp(meta: &fs::Metadata) -> (u64, u64, i64, i64) {
    (meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec())
}

/// Copy every file of `src` into `dest`, durably. Files that vanish meanwhile (retention,
/// a roll's rename) are skipped: the last step settles them.
fn copy_all(src: &Path, dest: &Path) -> io::Result<Copied> {
    let mut copied = Copied::new();
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let meta = match entry.metadata() {
            Ok(m) if m.is_file() => m,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match copy_file(&entry.path(), &dest.join(&name)) {
            Ok(bytes) => {
                // What was copied, not what the file held when listed: a segment being
                // appended to may have grown meanwhile, and its tail is copied from here.
                let (ino, _, mtime, mtime_nsec) = stamp(&meta);
                copied.insert(name, (ino, bytes, mtime, mtime_nsec));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(copied)
}

/// Copy `from` to `to` durably; the bytes copied.
fn copy_file(from: &Path, to: &Path) -> io::Result<u64> {
    let bytes = fs::copy(from, to)?;
    fs::File::open(to)?.sync_all()?;
    Ok(bytes)
}

/// Append `from`'s bytes past `known` to `to` (a segment that only grew).
fn copy_tail(from: &Path, to: &Path, known: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut source = fs::File::open(from)?;
    source.seek(SeekFrom::Start(known))?;
    let mut target = fs::OpenOptions::new().append(true).open(to)?;
    io::copy(&mut source, &mut target)?;
    target.sync_all()
}

/// Bring `dest` level with `src` (both settled: the caller holds the log lock and the log
/// is closed): files changed since `copied` are copied again, files gone are removed.
fn catch_up(src: &Path, dest: &Path, copied: &Copied) -> io::Result<()> {
    let mut present = std::collections::BTreeSet::new();
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let now = stamp(&meta);
        match copied.get(&name) {
            Some(before) if *before == now => {}
            // The same inode, longer: an appended segment (a rewritten file, an index, is
            // copied whole).
            Some(&(ino, len, ..)) if ino == now.0 && now.1 > len && name.ends_with(".log") => {
                copy_tail(&entry.path(), &dest.join(&name), len)?;
            }
            _ => {
                copy_file(&entry.path(), &dest.join(&name))?;
            }
        }
        present.insert(name);
    }
    for entry in fs::read_dir(dest)? {
        let entry = entry?;
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| present.contains(n))
        {
            fs::remove_file(entry.path())?;
        }
    }
    partition_dirs::sync_dir(dest);
    Ok(())
}

/// The last step, under the log lock: close, catch up, rename into place, open there.
/// On failure the partition goes on from its old dir.
fn swap(
    partition: &Partition,
    log: &mut PartitionLog,
    future: &Path,
    copied: &Copied,
) -> io::Result<PathBuf> {
    let src = partition.dir();
    let dest_log_dir = future.parent().unwrap_or(future);
    let dest = dest_log_dir.join(partition_dir_name(&partition.topic, partition.index));
    if dest.exists() {
        return Err(io::Error::other(format!(
            "{} is already there",
            dest.display()
        )));
    }
    let config = log.config().clone();
    let reopen_src = |log: &mut PartitionLog, why: io::Error| -> io::Result<PathBuf> {
        *log = PartitionLog::open(&src, config.clone()).map_err(io::Error::other)?;
        Err(why)
    };
    log.close().map_err(io::Error::other)?;
    if let Err(e) = catch_up(&src, future, copied) {
        return reopen_src(log, e);
    }
    if let Err(e) = fs::rename(future, &dest) {
        return reopen_src(log, e);
    }
    partition_dirs::sync_dir(dest_log_dir);
    let moved = match PartitionLog::open(&dest, config.clone()) {
        Ok(moved) => moved,
        Err(e) => {
            let _ = fs::rename(&dest, future);
            return reopen_src(log, io::Error::other(e));
        }
    };
    *log = moved;
    partition.txns.lock().expect("lock").relocate(&dest);
    partition.epochs.lock().expect("lock").relocate(&dest);
    *partition.dir.write().expect("lock") = dest.clone();
    match partition_dirs::retire(&src, &partition.topic, partition.index) {
        Ok(retired) => partition_dirs::remove_in_background(vec![retired]),
        // Two copies now: the next start keeps the one the move wrote.
        Err(e) => logging::warn(
            LOGGER,
            &format!("cannot retire {} after the move: {e}", src.display()),
        ),
    }
    Ok(dest)
}

fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(fs::Metadata::is_file)
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::file_store::TopicRecord;
    use crate::cluster::partition::ReplicaState;
    use crate::cluster::topics::TopicRegistry;
    use kafkalite_core::records::{encode_batch, Compression, RecordInput};
    use kafkalite_core::storage::LogConfig;

    fn batch(n: usize, tag: u8) -> Vec<u8> {
        let records: Vec<RecordInput> = (0..n)
            .map(|_| RecordInput {
                timestamp: 1_000,
                key: None,
                value: Some(vec![tag; 100]),
                headers: Vec::new(),
            })
            .collect();
        encode_batch(&records, Compression::None, 0).unwrap()
    }

    fn registry(dirs: &[&Path]) -> TopicRegistry {
        TopicRegistry::new(
            dirs.iter().map(|d| d.to_path_buf()).collect(),
            ReplicaState::single_node(1),
        )
    }

    fn record(id: uuid::Uuid) -> TopicRecord {
        TopicRecord {
            id,
            partitions: 1,
            configs: BTreeMap::new(),
        }
    }

    fn wait_done(moves: &Moves) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while moves.any_running() {
            assert!(Instant::now() < deadline, "the move did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_partition_moves_to_another_log_dir_while_appends_go_on() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // Small segments: the move copies several sealed ones and the active one.
        let config = LogConfig {
            segment_bytes: 64 * 1024,
            ..LogConfig::default()
        };
        let id = uuid::Uuid::new_v4();
        let topics = registry(&[a.path(), b.path()]);
        let topic = topics.open_topic("t", record(id), &config, true).unwrap();
        let p = topic.partition(0).unwrap();
        assert_eq!(p.dir(), a.path().join("t-0"));
        for i in 0..200u8 {
            p.append(&batch(10, i), 0).unwrap();
        }
        let moves = Arc::new(Moves::default());
        assert_eq!(moves.request(&p, b.path()).unwrap(), Requested::Moving);
        // Appends go on during the copy; every one of them must be in the moved log.
        let mut appended = 2_000;
        while moves.any_running() && appended < 200_000 {
            p.append(&batch(10, 7), 0).unwrap();
            appended += 10;
        }
        wait_done(&moves);
        for _ in 0..10 {
            p.append(&batch(10, 9), 0).unwrap();
            appended += 10;
        }
        assert_eq!(p.dir(), b.path().join("t-0"));
        assert_eq!(p.log_end_offset(), appended);
        assert_eq!(
            moves.request(&p, b.path()).unwrap(),
            Requested::AlreadyThere
        );
        // The old dir is retired in the background: on a loaded machine that takes a while.
        let deadline = Instant::now() + Duration::from_secs(10);
        while a.path().join("t-0").exists() {
            assert!(Instant::now() < deadline, "the old dir is not retired");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            fs::read_dir(b.path())
                .unwrap()
                .flatten()
                .all(|e| !e.file_name().to_string_lossy().ends_with(FUTURE_SUFFIX)),
            "no future dir is left"
        );

        // Reopened from the dirs in another order, the partition is found where it moved,
        // with every record.
        p.log.lock().unwrap().close().unwrap();
        drop((p, topic, topics));
        let topics = registry(&[b.path(), a.path()]);
        let topic = topics.open_topic("t", record(id), &config, false).unwrap();
        let p = topic.partition(0).unwrap();
        assert_eq!(p.dir(), b.path().join("t-0"));
        assert_eq!(p.log_end_offset(), appended);
        let log = p.log.lock().unwrap();
        assert!(log.opened_clean(), "the moved log was closed cleanly");
        assert!(log.segment_count() > 3);
    }

    #[test]
    fn a_move_stops_when_the_log_is_closed_and_leaves_no_future_dir() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let topics = registry(&[a.path(), b.path()]);
        let topic = topics
            .open_topic(
                "t",
                record(uuid::Uuid::new_v4()),
                &LogConfig::default(),
                true,
            )
            .unwrap();
        let p = topic.partition(0).unwrap();
        p.append(&batch(10, 1), 0).unwrap();
        p.log.lock().unwrap().close().unwrap();
        let moves = Arc::new(Moves::default());
        moves.request(&p, b.path()).unwrap();
        wait_done(&moves);
        assert_eq!(p.dir(), a.path().join("t-0"));
        assert_eq!(fs::read_dir(b.path()).unwrap().count(), 0);
    }

    #[test]
    fn of_two_copies_left_by_a_crash_the_moved_one_is_opened_and_the_other_retired() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let id = uuid::Uuid::new_v4();
        let config = LogConfig::default();
        {
            let topics = registry(&[a.path()]);
            let topic = topics.open_topic("t", record(id), &config, true).unwrap();
            let p = topic.partition(0).unwrap();
            p.append(&batch(5, 1), 0).unwrap();
            p.log.lock().unwrap().close().unwrap();
        }
        // A move's copy renamed into place, the source not yet retired.
        std::thread::sleep(Duration::from_millis(20));
        fs::create_dir(b.path().join("t-0")).unwrap();
        copy_all(&a.path().join("t-0"), &b.path().join("t-0")).unwrap();
        let topics = registry(&[a.path(), b.path()]);
        let topic = topics.open_topic("t", record(id), &config, false).unwrap();
        let p = topic.partition(0).unwrap();
        assert_eq!(p.dir(), b.path().join("t-0"));
        assert_eq!(p.log_end_offset(), 5);
        assert!(!a.path().join("t-0").exists());
    }
}
