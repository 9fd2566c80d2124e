//! Large-chunk reads of a segment and buffered writes of a `.cleaned` file: few syscalls,
//! bounded memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};
use crate::records::BatchHeader;
use crate::storage::segment::WrittenBatch;

/// Segments are read in chunks this big: few syscalls, bounded memory.
const READ_CHUNK: usize = 4 << 20;
const WRITE_BUFFER: usize = 1 << 20;

/// Reads a file forward in large chunks, handing out byte ranges within them.
pub(super) struct ChunkReader<'a> {
    file: &'a File,
    size: u64,
    buf: Vec<u8>,
    buf_start: u64,
}

impl<'a> ChunkReader<'a> {
    pub(super) fn new(file: &'a File, size: u64) -> ChunkReader<'a> {
        ChunkReader {
            file,
            size,
            buf: Vec::new(),
            buf_start: 0,
        }
    }

    pub(super) fn bytes_at(&mut self, position: u64, len: usize) -> Result<&[u8]> {
        let end = position.saturating_add(len as u64);
        if end > self.size {
            return Err(Error::corrupt(format!(
                "{len} bytes at {position} overrun the {} byte segment",
                self.size
            )));
        }
        let buffered = position >= self.buf_start && end <= self.buf_start + self.buf.len() as u64;
        if !buffered {
            let want = (READ_CHUNK.max(len) as u64).min(self.size - position);
            self.buf.resize(want as usize, 0);
            self.file.read_exact_at(&mut self.buf, position)?;
            self.buf_start = position;
        }
        let at = (position - self.buf_start) as usize;
        Ok(&self.buf[at..at + len])
    }
}

/// Appends kept batches to a `.cleaned` file, noting where each went for the indexes.
pub(super) struct GroupWriter {
    out: BufWriter<File>,
    position: u64,
    batches: Vec<(u64, WrittenBatch)>,
}

impl GroupWriter {
    pub(super) fn new(file: File) -> GroupWriter {
        GroupWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
            position: 0,
            batches: Vec::new(),
        }
    }

    pub(super) fn write(&mut self, header: &BatchHeader, batch: &[u8]) -> Result<()> {
        self.out.write_all(batch)?;
        self.batches.push((
            self.position,
            WrittenBatch {
                base_offset: header.base_offset,
                last_offset: header.last_offset(),
                max_timestamp: header.max_timestamp,
                size: batch.len() as u64,
            },
        ));
        self.position += batch.len() as u64;
        Ok(())
    }

    /// Flush and fsync: the file must be whole on disk before its rename commits it.
    pub(super) fn finish(self) -> Result<(File, Vec<(u64, WrittenBatch)>)> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        file.sync_data()?;
        Ok((file, self.batches))
    }
}
