//! Walking the batches of a `.log` file: cheap header hops for reads, and the full
//! validating pass that recovery runs after an unclean shutdown.

use std::fs::File;
use std::io;
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
    if position >= file_size {
        return Ok(Ok(None));
    }
    let left = file_size - position;
    if left < BATCH_HEADER_LEN as u64 {
        return Ok(Err(format!(
            "{left} bytes before the end of the file, fewer than a batch header"
        )));
    }
    let mut buf = [0u8; BATCH_HEADER_LEN];
    file.read_exact_at(&mut buf, position)?;
    Ok(match BatchHeader::parse(&buf) {
        Err(e) => Err(e.to_string()),
        Ok(h) if h.total_size() as u64 > left => Err(format!(
            "a batch of {} bytes would overrun the {left} bytes left in the file",
            h.total_size()
        )),
        Ok(h) => Ok(Some(h)),
    })
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
        if header.base_offset < next_offset || header.last_offset() < header.base_offset {
            return stop(
                position,
                format!(
                    "batch offsets {}..={} do not follow offset {next_offset}",
                    header.base_offset,
                    header.last_offset()
                ),
            );
        }
        visit(position, &header);
        next_offset = header.last_offset() + 1;
        position += total;
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
