//! The log-dir lock: an exclusive `flock` on `<dir>/.lock` (Kafka's lock file name), held
//! for as long as its owner keeps the guard. Two writers appending to the same segment
//! files would overwrite each other's records, so every way of opening a data dir (the
//! broker's log dirs, a standalone partition log) takes it first.
//!
//! `flock` locks belong to the open file description, so a second acquire of the same dir
//! fails in the same process too, and the kernel drops the lock when the process dies: a
//! crashed broker never leaves a stale lock behind. The holder's pid is written into the
//! file only to name it in the error.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Kafka's name for the lock file in every log dir.
pub const LOCK_FILE: &str = ".lock";

/// Holds the lock on one directory; dropping it (closing the file) releases it.
#[must_use = "the directory is unlocked as soon as the guard is dropped"]
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _file: File,
}

impl DirLock {
    /// Create `dir` if needed and lock it without blocking. Fails with
    /// [`Error::LogDirInUse`] naming the dir when another broker or process holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        fs::create_dir_all(dir)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::WouldBlock {
                return Err(err.into());
            }
            let mut holder = String::new();
            // Best effort: the holder may be between truncating and writing its pid.
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(Error::LogDirInUse {
                dir: dir.to_path_buf(),
                holder: if holder.is_empty() {
                    "unknown".to_string()
                } else {
                    holder.to_string()
                },
            });
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{}", std::process::id())?;
        Ok(DirLock {
            dir: dir.to_path_buf(),
            _file: file,
        })
    }

    /// Lock every dir of `dirs` (all or none: the ones taken are released on failure).
    pub fn acquire_all<P: AsRef<Path>>(dirs: &[P]) -> Result<Vec<DirLock>> {
        dirs.iter().map(|d| DirLock::acquire(d.as_ref())).collect()
    }

    /// The locked directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_dir_fails_naming_it_until_the_first_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let first = DirLock::acquire(&dir).unwrap();
        assert_eq!(first.dir(), dir);
        let pid = fs::read_to_string(dir.join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());

        let err = DirLock::acquire(&dir).unwrap_err();
        assert!(
            matches!(&err, Error::LogDirInUse { dir: d, holder } if *d == dir && *holder == pid.trim()),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(msg.contains("in use by another kafkalite broker"), "{msg}");

        drop(first);
        let again = DirLock::acquire(&dir).unwrap();
        drop(again);
    }

    #[test]
    fn locks_on_different_dirs_are_independent() {
        let tmp = tempfile::tempdir().unwrap();
        let _a = DirLock::acquire(&tmp.path().join("a")).unwrap();
        let _b = DirLock::acquire(&tmp.path().join("b")).unwrap();
    }
}
