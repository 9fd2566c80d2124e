//! Which of the broker's log dirs (`log.dirs`, JBOD) holds a partition.
//!
//! A partition lives where its dir is found, so a list of log dirs that changes between
//! starts (a dir added, the order changed) never hides data. A new partition goes to the
//! dir with the most usable space; dirs on one filesystem share that space, so among them
//! the one holding fewest partitions wins.
//!
//! A finished move between dirs (`replica_move`) renames the copy into place before it
//! retires the source, so a crash between the two leaves two identical copies: the copy
//! whose `partition.metadata` is newer (written by the move) is kept.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The dir name of partition `index` of `topic` in any log dir.
#[must_use]
pub fn partition_dir_name(topic: &str, index: i32) -> String {
    format!("{topic}-{index}")
}

/// (total, usable) bytes of the filesystem holding `dir`; None when it cannot be read
/// (the dir is gone or its disk failed).
#[must_use]
pub fn capacity(dir: &Path) -> Option<(i64, i64)> {
    statvfs(dir).map(|s| (s.total, s.usable))
}

struct FsSpace {
    total: i64,
    usable: i64,
}

fn statvfs(dir: &Path) -> Option<FsSpace> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `path` is a valid NUL-terminated string and `stat` a plain struct statvfs
    // fills in; nothing is kept past the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    let block = i64::try_from(stat.f_frsize).ok()?;
    Some(FsSpace {
        total: i64::try_from(stat.f_blocks).ok()? * block,
        usable: i64::try_from(stat.f_bavail).ok()? * block,
    })
}

/// The copies of partition `index` of `topic` found in `log_dirs`, in their order.
#[must_use]
pub fn existing(log_dirs: &[PathBuf], topic: &str, index: i32) -> Vec<PathBuf> {
    let name = partition_dir_name(topic, index);
    log_dirs
        .iter()
        .map(|d| d.join(&name))
        .filter(|p| p.is_dir())
        .collect()
}

/// Of several copies of one partition, the one to keep (newest `partition.metadata`, the
/// first on a tie) and the others.
#[must_use]
pub fn keep_newest(mut copies: Vec<PathBuf>) -> (PathBuf, Vec<PathBuf>) {
    let written = |p: &Path| {
        fs::metadata(p.join(super::partition_dirs::PARTITION_METADATA_FILE))
            .and_then(|m| m.modified())
            .ok()
    };
    let mut best = 0;
    for i in 1..copies.len() {
        if written(&copies[i]) > written(&copies[best]) {
            best = i;
        }
    }
    let keep = copies.remove(best);
    (keep, copies)
}

/// What placement knows of one log dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirLoad {
    /// The filesystem it is on (`st_dev`); dirs sharing one share its space.
    pub device: u64,
    /// Usable bytes of that filesystem; None if it cannot be read (the dir is offline).
    pub usable: Option<i64>,
    /// Partitions it holds now.
    pub partitions: usize,
}

/// Where a new partition goes: the index into `loads` of the online dir whose filesystem
/// has the most usable bytes, fewest partitions among dirs of that filesystem, first on a
/// tie; None if no dir is online. A filesystem's space is the first figure read for it,
/// so dirs on one filesystem compare by partitions alone.
#[must_use]
pub fn choose(loads: &[DirLoad]) -> Option<usize> {
    let space_of = |device: u64| {
        loads
            .iter()
            .find(|l| l.device == device && l.usable.is_some())
            .and_then(|l| l.usable)
    };
    (0..loads.len())
        .filter(|&i| loads[i].usable.is_some())
        .min_by_key(|&i| {
            let space = space_of(loads[i].device).unwrap_or(0);
            (std::cmp::Reverse(space), loads[i].partitions, i)
        })
}

/// Read each log dir's filesystem and space; `partitions` as the caller counts them.
#[must_use]
pub fn loads(log_dirs: &[PathBuf], partitions: &[usize]) -> Vec<DirLoad> {
    log_dirs
        .iter()
        .zip(partitions)
        .map(|(dir, &count)| DirLoad {
            device: fs::metadata(dir).map(|m| m.dev()).unwrap_or(0),
            usable: statvfs(dir).map(|s| s.usable),
            partitions: count,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(device: u64, usable: i64, partitions: usize) -> DirLoad {
        DirLoad {
            device,
            usable: Some(usable),
            partitions,
        }
    }

    #[test]
    fn the_filesystem_with_most_space_wins_whatever_its_partitions() {
        let loads = [load(1, 10 << 30, 0), load(2, 50 << 30, 900)];
        assert_eq!(choose(&loads), Some(1));
    }

    #[test]
    fn dirs_on_one_filesystem_compare_by_partitions_then_order() {
        // The second dir's figure was read a moment later, with a little less space: it is
        // the same filesystem, so only the partition counts matter.
        let loads = [load(7, 100, 3), load(7, 99, 2), load(7, 98, 2)];
        assert_eq!(choose(&loads), Some(1));
    }

    #[test]
    fn an_offline_dir_is_never_chosen() {
        let offline = DirLoad {
            device: 3,
            usable: None,
            partitions: 0,
        };
        assert_eq!(choose(&[offline, load(4, 1, 10)]), Some(1));
        assert_eq!(choose(&[offline]), None);
    }

    #[test]
    fn of_two_copies_the_newer_metadata_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        for dir in [&a, &b] {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(
            b.join(super::super::partition_dirs::PARTITION_METADATA_FILE),
            "x",
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(
            a.join(super::super::partition_dirs::PARTITION_METADATA_FILE),
            "x",
        )
        .unwrap();
        let (keep, stale) = keep_newest(vec![b.clone(), a.clone()]);
        assert_eq!((keep, stale), (a, vec![b]));
    }
}
