//! Walking the batches of a `.log` file: cheap header hops for reads, and the full
//! validating pass that recovery runs after an unclean shutdown.

use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

use crate::records::{validate_batch, BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD};

/// Read buffer for recovery scans: big enough to amortise syscalls, small enough to stay
/// cache-friendly.
const SCAN_CHUNK_BYTES: usize = 8 << 20;

/// The header of the batch at `position`, or `None` past the end or when the bytes there
/// do not parse (callers only hop over data that recovery already validated).
pub fn read_header_at(
    file: &File,
    position: u64,
    file_size: u64,
) -> io::Result<Option<BatchHeader>> {
    if position + BATCH_HEADER_LEN as u64 > file_size {
        return Ok(None);
    }
    let mut buf = [0u8; BATCH_HEADER_LEN];
    file.read_exact_at(&mut buf, position)?;
    match BatchHeader::parse(&buf) {
        Ok(h) if position + h.total_size() as u64 <= file_size => Ok(Some(h)),
        _ => Ok(None),
    }
}

/// The header of the batch at `position`: `Ok(None)` at or past `file_size` (the end of the
/// data), `Err(why)` when the bytes there are no whole batch's header. Reads use it to
/// refuse a damaged segment rather than skip the rest of it.
pub fn read_header_checked(
    file: &File,
    position: u64,
    file_size: u64,
) -> io::Result<Result<Option<BatchHeader>, String>> {
    HeaderWindow::single().read_checked(file, position, file_size)
}

/// How much a walk over small batches reads at once.
const HEADER_WINDOW_BYTES: usize = 16 << 10;

/// Batch headers read through a window: a walk that steps on every header of a fetch costs
/// one read per window of small batches instead of one syscall per batch (a 1 MiB fetch of
/// 100-byte batches holds ~6,000 headers). After a batch bigger than half a window it reads
/// just the next header, so large batches are not copied to find their successor.
pub struct HeaderWindow {
    buf: Vec<u8>,
    start: u64,
    windowed: bool,
}

impl HeaderWindow {
    /// For a walk along consecutive batches.
    pub fn new() -> Self {
        HeaderWindow {
            buf: Vec::new(),
            start: 0,
            windowed: true,
        }
    }

    /// For one header: reads exactly its bytes.
    fn single() -> Self {
        HeaderWindow {
            windowed: false,
            ..HeaderWindow::new()
        }
    }

    /// `read_header_checked`, served from the window when it holds the header.
    pub fn read_checked(
        &mut self,
        file: &File,
        position: u64,
        file_size: u64,
    ) -> io::Result<Result<Option<BatchHeader>, String>> {
        if position >= file_size {
            return Ok(Ok(None));
        }
        let left = file_size - position;
        if left < BATCH_HEADER_LEN as u64 {
            return Ok(Err(format!(
                "{left} bytes before the end of the file, fewer than a batch header"
            )));
        }
        let window_end = self.start + self.buf.len() as u64;
        if position < self.start || position + BATCH_HEADER_LEN as u64 > window_end {
            let len = if self.windowed {
                (HEADER_WINDOW_BYTES as u64).min(left) as usize
            } else {
                BATCH_HEADER_LEN
            };
            self.buf.resize(len, 0);
            file.read_exact_at(&mut self.buf, position)?;
            self.start = position;
        }
        let at = (position - self.start) as usize;
        Ok(
            match BatchHeader::parse(&self.buf[at..at + BATCH_HEADER_LEN]) {
                Err(e) => Err(e.to_string()),
                Ok(h) if h.total_size() as u64 > left => Err(format!(
                    "a batch of {} bytes would overrun the {left} bytes left in the file",
                    h.total_size()
                )),
                Ok(h) => {
                    self.windowed = h.total_size() <= HEADER_WINDOW_BYTES / 2;
                    Ok(Some(h))
                }
            },
        )
    }
}

impl Default for HeaderWindow {
    fn default() -> Self {
        HeaderWindow::new()
    }
}

/// Up to a batch header's worth of bytes at `position` (fewer near the end of the file).
pub fn read_prefix(file: &File, position: u64, file_size: u64) -> io::Result<Vec<u8>> {
    let len = (BATCH_HEADER_LEN as u64).min(file_size.saturating_sub(position)) as usize;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, position)?;
    Ok(buf)
}

/// Read the whole batch at `position` whose header is `header`.
pub fn read_batch_at(file: &File, position: u64, header: &BatchHeader) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; header.total_size()];
    file.read_exact_at(&mut buf, position)?;
    Ok(buf)
}

/// Where a validating scan stopped: bytes before `valid` are whole, valid batches;
/// `problem` says what is wrong at `valid` (`None` when the scan reached the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanEnd {
    pub valid: u64,
    pub problem: Option<String>,
}

/// Validate every batch from `start` to `file_size`: size within the file, CRC32C, magic,
/// attributes, and base offsets increasing from `min_offset`. Calls `visit(position, header)`
/// for each valid batch and returns where the valid bytes end (== `file_size` when all is
/// well) and why.
pub fn scan_valid(
    file: &File,
    file_size: u64,
    start: u64,
    min_offset: i64,
    mut visit: impl FnMut(u64, &BatchHeader),
) -> io::Result<ScanEnd> {
    scan_valid_until(file, file_size, start, min_offset, |position, h| {
        visit(position, h);
        ControlFlow::Continue(())
    })
}

/// `scan_valid`, where `visit` may stop the scan: it then ends after that batch with no
/// problem and `valid` short of `file_size` (the scrubber paces itself this way).
pub fn scan_valid_until(
    file: &File,
    file_size: u64,
    start: u64,
    min_offset: i64,
    mut visit: impl FnMut(u64, &BatchHeader) -> ControlFlow<()>,
) -> io::Result<ScanEnd> {
    let mut buf: Vec<u8> = Vec::new();
    // File position of buf[0].
    let mut buf_start = start;
    let mut position = start;
    let mut next_offset = min_offset;
    let stop = |valid: u64, problem: String| {
        Ok(ScanEnd {
            valid,
            problem: Some(problem),
        })
    };
    loop {
        let remaining_in_file = file_size - position;
        if remaining_in_file == 0 {
            return Ok(ScanEnd {
                valid: position,
                problem: None,
            });
        }
        if remaining_in_file < BATCH_HEADER_LEN as u64 {
            return stop(
                position,
                format!("{remaining_in_file} bytes left, fewer than a batch header (a torn write)"),
            );
        }
        let at = (position - buf_start) as usize;
        if buf.len() - at < LOG_OVERHEAD {
            fill(
                file,
                &mut buf,
                &mut buf_start,
                position,
                SCAN_CHUNK_BYTES,
                file_size,
            )?;
            continue;
        }
        let at = (position - buf_start) as usize;
        let length = i32::from_be_bytes(buf[at + 8..at + 12].try_into().unwrap());
        if length < (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32 {
            return stop(
                position,
                format!("batch length {length} is below the minimum"),
            );
        }
        let total = LOG_OVERHEAD as u64 + length as u64;
        if total > remaining_in_file {
            return stop(
                position,
                format!(
                    "a batch of {total} bytes has only {remaining_in_file} bytes in the file \
                     (a torn write)"
                ),
            );
        }
        if ((buf.len() - at) as u64) < total {
            let want = SCAN_CHUNK_BYTES.max(total as usize);
            fill(file, &mut buf, &mut buf_start, position, want, file_size)?;
            continue;
        }
        let batch = &buf[at..at + total as usize];
        let header = match validate_batch(batch) {
            Ok(h) => h,
            Err(e) => return stop(position, e.to_string()),
        };
        // Offsets are stored relative to the segment's base in 32 bits (index entries):
        // a batch past that range is damage, not data (the fuzzer's segment recovery
        // target found one that tripped the index's own assertion).
        let beyond = header.last_offset().saturating_sub(min_offset) > i64::from(u32::MAX);
        if header.base_offset < next_offset || header.last_offset() < header.base_offset || beyond {
            return stop(
                position,
                format!(
                    "batch offsets {}..={} do not follow offset {next_offset}",
                    header.base_offset,
                    header.last_offset()
                ),
            );
        }
        let flow = visit(position, &header);
        next_offset = header.last_offset() + 1;
        position += total;
        if flow.is_break() {
            return Ok(ScanEnd {
                valid: position,
                problem: None,
            });
        }
    }
}

/// Refill `buf` with up to `want` bytes starting at file position `from`.
fn fill(
    file: &File,
    buf: &mut Vec<u8>,
    buf_start: &mut u64,
    from: u64,
    want: usize,
    file_size: u64,
) -> io::Result<()> {
    let len = want.min((file_size - from) as usize);
    buf.resize(len, 0);
    file.read_exact_at(buf, from)?;
    *buf_start = from;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{encode_batch, Compression, RecordInput};

    fn batch_of(base_offset: i64, value_len: usize) -> Vec<u8> {
        let record = RecordInput {
            timestamp: 1_000,
            key: None,
            value: Some(vec![7u8; value_len]),
            headers: Vec::new(),
        };
        let mut bytes = encode_batch(&[record], Compression::None, 0).unwrap();
        bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
        bytes
    }

    /// Small batches (served from one window), big ones (read header by header) and a
    /// header at a window's edge all match a plain one-header read.
    #[test]
    fn window_walk_matches_single_header_reads() {
        let sizes = [100, 100, 40_000, 100, 9_000, 9_000, 300, 100, 16_000, 100];
        let file = tempfile::tempfile().unwrap();
        let mut positions = Vec::new();
        let mut end = 0u64;
        for (offset, size) in sizes.iter().cycle().take(200).enumerate() {
            let bytes = batch_of(offset as i64, *size);
            file.write_all_at(&bytes, end).unwrap();
            positions.push(end);
            end += bytes.len() as u64;
        }
        let mut window = HeaderWindow::new();
        let mut position = 0;
        for expected in &positions {
            assert_eq!(position, *expected);
            let walked = window
                .read_checked(&file, position, end)
                .unwrap()
                .unwrap()
                .unwrap();
            let single = read_header_checked(&file, position, end)
                .unwrap()
                .unwrap()
                .unwrap();
            assert_eq!(walked.base_offset, single.base_offset);
            position += walked.total_size() as u64;
        }
        assert!(window
            .read_checked(&file, position, end)
            .unwrap()
            .unwrap()
            .is_none());
    }

    /// A damaged header inside a window already read is still refused.
    #[test]
    fn window_walk_refuses_a_damaged_header() {
        let file = tempfile::tempfile().unwrap();
        let one = batch_of(0, 100);
        let len = one.len() as u64;
        for i in 0..10 {
            file.write_all_at(&batch_of(i, 100), i as u64 * len)
                .unwrap();
        }
        file.write_all_at(&[0xff], 5 * len + 16).unwrap(); // the sixth batch's magic byte
        let mut window = HeaderWindow::new();
        for i in 0..5 {
            let h = window.read_checked(&file, i * len, 10 * len).unwrap();
            assert!(matches!(h, Ok(Some(_))), "{i}");
        }
        let damaged = window.read_checked(&file, 5 * len, 10 * len).unwrap();
        assert!(damaged.is_err(), "{damaged:?}");
    }
}
