//! io_uring writer: the iovec list goes out as Writev SQEs (up to IOV_MAX iovecs each) at
//! consecutive offsets, submitted together and awaited together. A short completion (rare
//! for regular files) finishes through `pwritev` so ordering stays simple.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types, IoUring};

use crate::io::iovecs::{pwritev_all, IoVecs, IOV_MAX};

const RING_ENTRIES: u32 = 16;

pub struct UringWriter {
    ring: IoUring,
}

impl UringWriter {
    pub fn new() -> io::Result<UringWriter> {
        Ok(UringWriter {
            ring: IoUring::new(RING_ENTRIES)?,
        })
    }

    pub fn write_all(
        &mut self,
        fd: RawFd,
        mut offset: u64,
        iov: &mut IoVecs<'_>,
    ) -> io::Result<()> {
        while !iov.is_empty() {
            // One round: up to RING_ENTRIES chunks of up to IOV_MAX iovecs each.
            let remaining = iov.remaining();
            // (first iovec, iovec count, file offset, bytes) per SQE.
            let mut chunks: Vec<(usize, usize, u64, usize)> = Vec::new();
            let mut start = 0;
            let mut chunk_offset = offset;
            while start < remaining.len() && chunks.len() < RING_ENTRIES as usize {
                let len = (remaining.len() - start).min(IOV_MAX);
                let bytes: usize = remaining[start..start + len]
                    .iter()
                    .map(|v| v.iov_len)
                    .sum();
                chunks.push((start, len, chunk_offset, bytes));
                chunk_offset += bytes as u64;
                start += len;
            }
            let written = self.submit_round(fd, remaining, &chunks)?;
            // Everything up to the first short chunk is on disk, in order.
            let complete_bytes: usize = written
                .iter()
                .take_while(|(w, want)| w == want)
                .map(|(w, _)| *w)
                .sum();
            let first_short = written.iter().position(|(w, want)| w != want);
            iov.advance(complete_bytes);
            offset += complete_bytes as u64;
            if let Some(i) = first_short {
                // Later chunks may have landed too; rewriting them is harmless and leaves the
                // file exactly as a sequential write would.
                let partial = written[i].0;
                iov.advance(partial);
                offset += partial as u64;
                return pwritev_all(fd, offset, iov);
            }
        }
        Ok(())
    }

    /// Submit one Writev per chunk and wait for all; returns (written, wanted) per chunk.
    fn submit_round(
        &mut self,
        fd: RawFd,
        iov: &[libc::iovec],
        chunks: &[(usize, usize, u64, usize)],
    ) -> io::Result<Vec<(usize, usize)>> {
        {
            let mut sq = self.ring.submission();
            for (i, &(start, len, offset, _)) in chunks.iter().enumerate() {
                let entry = opcode::Writev::new(types::Fd(fd), iov[start..].as_ptr(), len as u32)
                    .offset(offset)
                    .build()
                    .user_data(i as u64);
                // SAFETY: the iovecs and the buffers they point to outlive the submission:
                // we wait for every completion below before returning.
                unsafe { sq.push(&entry) }
                    .map_err(|_| io::Error::other("io_uring submission queue full"))?;
            }
        }
        let mut results = vec![(0usize, 0usize); chunks.len()];
        for (i, c) in chunks.iter().enumerate() {
            results[i].1 = c.3;
        }
        let mut done = 0;
        while done < chunks.len() {
            match self.ring.submit_and_wait(chunks.len() - done) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let mut first_error: Option<io::Error> = None;
            for cqe in self.ring.completion() {
                let i = cqe.user_data() as usize;
                let res = cqe.result();
                if res < 0 {
                    let err = io::Error::from_raw_os_error(-res);
                    // EINTR/EAGAIN: count as a zero-byte short write; pwritev redoes it.
                    if !matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) && first_error.is_none()
                    {
                        first_error = Some(err);
                    }
                } else {
                    results[i].0 = res as usize;
                }
                done += 1;
            }
            if let Some(e) = first_error {
                // Drain remaining completions before failing so no SQE outlives its buffers.
                while done < chunks.len() {
                    self.ring.submit_and_wait(1)?;
                    done += self.ring.completion().count();
                }
                return Err(e);
            }
        }
        Ok(results)
    }
}
