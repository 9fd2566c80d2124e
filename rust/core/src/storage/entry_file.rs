//! The on-disk side of an index: a file of fixed-size entries whose first `written` entries
//! match the in-memory index. Appends write only the tail; truncation cuts whole entries.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct EntryFile {
    path: PathBuf,
    entry_bytes: usize,
    written: usize,
}

impl EntryFile {
    #[must_use]
    pub fn new(path: PathBuf, entry_bytes: usize, written: usize) -> Self {
        EntryFile {
            path,
            entry_bytes,
            written,
        }
    }

    /// The file's bytes when it exists and holds whole entries; `None` otherwise (the caller
    /// rebuilds the index from the log).
    pub fn read_entries(path: &Path, entry_bytes: usize) -> io::Result<Option<Vec<u8>>> {
        match fs::read(path) {
            Ok(bytes) if bytes.len() % entry_bytes == 0 => Ok(Some(bytes)),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Does the file already hold all `entries` entries?
    #[must_use]
    pub fn is_current(&self, entries: usize) -> bool {
        self.written == entries && self.path.exists()
    }

    /// Write the entries of `entries` not yet on disk, each encoded by `encode` into exactly
    /// `entry_bytes` bytes.
    pub fn flush<T>(&mut self, entries: &[T], encode: impl Fn(&T, &mut Vec<u8>)) -> io::Result<()> {
        if self.is_current(entries.len()) {
            return Ok(());
        }
        let tail = &entries[self.written..];
        let mut buf = Vec::with_capacity(tail.len() * self.entry_bytes);
        for entry in tail {
            encode(entry, &mut buf);
        }
        debug_assert_eq!(buf.len(), tail.len() * self.entry_bytes);
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.path)?;
        file.write_all(&buf)?;
        self.written = entries.len();
        Ok(())
    }

    /// Keep only the first `keep` entries on disk.
    pub fn truncate(&mut self, keep: usize) -> io::Result<()> {
        if self.written > keep {
            self.written = keep;
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?;
            file.set_len((keep * self.entry_bytes) as u64)?;
        }
        Ok(())
    }

    /// Empty the file, to be rewritten from memory.
    pub fn reset(&mut self) -> io::Result<()> {
        File::create(&self.path)?;
        self.written = 0;
        Ok(())
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}
