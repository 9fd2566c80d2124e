//! Small file operations the log's parts share (segments, checkpoints, damage marks).

/// Deleting what is already gone is not an error here (recovery and retention both tidy).
pub(crate) fn remove_if_exists(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Small state files (checkpoints, the log start, damage marks) are replaced whole, so a
/// crash leaves either the old text or the new one, never a torn mix.
pub(crate) fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
