//! The files a cleaner pass leaves in a partition dir (`<base>.log.cleaned` before its
//! commit point, `<base>.log.swap` after it, the `cleaner-offset-checkpoint`) and the
//! recovery of a pass a crash interrupted. `PartitionLog::open` runs that recovery, so this
//! module knows file names only, never the log.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::storage::files::remove_if_exists;
use crate::storage::scan::scan_valid;
use crate::storage::segment::file_stem;

/// Kafka keeps one `cleaner-offset-checkpoint` per log dir; one per partition dir here.
pub const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
pub(crate) const CLEANED_SUFFIX: &str = ".log.cleaned";
pub(crate) const SWAP_SUFFIX: &str = ".log.swap";

pub(crate) fn suffixed_path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{}{suffix}", file_stem(base)))
}

pub(crate) fn remove_segment_files(dir: &Path, base: i64) -> Result<()> {
    for suffix in [".log", ".index", ".timeindex"] {
        remove_if_exists(&suffixed_path(dir, base, suffix))?;
    }
    Ok(())
}

/// Renames and removals are durable only once the directory is synced.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// Base offset of `<20 digits><suffix>` file names.
fn base_of(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.len() != 20 {
        return None;
    }
    stem.parse().ok()
}

/// Finish or undo a compaction a crash interrupted; `PartitionLog::open` runs this before
/// it lists segments. A `.cleaned` file was never committed and goes. A `.swap` file was:
/// it replaces every segment whose base offset lies within its offsets (a trailing
/// segment emptied by the cleaner may survive, which only keeps records the cleaner would
/// have removed), then becomes `<base>.log`; its indexes are rebuilt by the open.
pub fn recover_interrupted(dir: &Path) -> Result<()> {
    let mut swaps = Vec::new();
    let mut bases = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if base_of(name, CLEANED_SUFFIX).is_some() {
            remove_if_exists(&dir.join(name))?;
        } else if let Some(base) = base_of(name, SWAP_SUFFIX) {
            swaps.push(base);
        } else if let Some(base) = base_of(name, ".log") {
            bases.push(base);
        }
    }
    if swaps.is_empty() {
        return Ok(());
    }
    for base in swaps {
        let swap = suffixed_path(dir, base, SWAP_SUFFIX);
        let file = File::open(&swap)?;
        let mut next = base + 1;
        scan_valid(&file, file.metadata()?.len(), 0, base, |_, h| {
            next = next.max(h.last_offset() + 1);
        })?;
        for &old in bases.iter().filter(|&&b| (base..next).contains(&b)) {
            remove_segment_files(dir, old)?;
        }
        remove_segment_files(dir, base)?;
        fs::rename(&swap, suffixed_path(dir, base, ".log"))?;
    }
    sync_dir(dir)
}
