//! io_uring writer: the iovec list goes out as Writev SQEs (up to IOV_MAX iovecs each) at
//! consecutive offsets, submitted together and awaited together. A short completion (rare
//! for regular files) is finished with `pwritev`, which keeps ordering simple.
//!
//! Measured here (Linux 6.18, ext4, buffered, 1 MiB appends, bench/append.py): io_uring
//! 3.56 GB/s against pwritev 4.56 GB/s and fio 4.9-5.4 GB/s. ext4 cannot take these writes
//! without blocking, so each one is punted to an io-wq worker and pays its wake-up; flagging
//! SQEs IOSQE_ASYNC (skipping the inline attempt) made it 2x slower still.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types, IoUring};

use crate::io::iovecs::{pwritev_all, IoVecs, IOV_MAX};

const RING_ENTRIES: u32 = 16;

/// One SQE's share of the iovec list.
#[derive(Clone, Copy)]
struct Chunk {
    first_iovec: usize,
    iovecs: usize,
    offset: u64,
    bytes: usize,
}

pub struct UringWriter {
    ring: IoUring,
}

impl UringWriter {
    pub fn new() -> io::Result<UringWriter> {
        Ok(UringWriter {
            ring: IoUring::new(RING_ENTRIES)?,
        })
    }

    /// Write everything in `iov` at `offset`.
    pub fn write_all(
        &mut self,
        fd: RawFd,
        mut offset: u64,
        iov: &mut IoVecs<'_>,
    ) -> io::Result<()> {
        while !iov.is_empty() {
            let chunks = plan_round(iov.remaining(), offset);
            let written = self.round(fd, iov.remaining(), &chunks)?;
            // Everything before the first short chunk is in place, in order.
            let mut short = None;
            for (chunk, &got) in chunks.iter().zip(&written) {
                iov.advance(got);
                offset += got as u64;
                if got != chunk.bytes {
                    short = Some(());
                    break;
                }
            }
            if short.is_some() {
                // Later chunks may have landed too; rewriting them is harmless and
                // leaves the file exactly as a sequential write would.
                return pwritev_all(fd, offset, iov);
            }
        }
        Ok(())
    }

    /// Submit one Writev per chunk and wait for all; bytes written per chunk.
    fn round(
        &mut self,
        fd: RawFd,
        iov: &[libc::iovec],
        chunks: &[Chunk],
    ) -> io::Result<Vec<usize>> {
        {
            let mut sq = self.ring.submission();
            for (i, c) in chunks.iter().enumerate() {
                let entry = opcode::Writev::new(
                    types::Fd(fd),
                    iov[c.first_iovec..].as_ptr(),
                    c.iovecs as u32,
                )
                .offset(c.offset)
                .build()
                .user_data(i as u64);
                // SAFETY: the iovecs and the buffers they point to outlive the submission:
                // every completion is awaited below before returning (or the ring dropped).
                unsafe { sq.push(&entry) }
                    .map_err(|_| io::Error::other("io_uring submission queue full"))?;
            }
        }
        let submitted = loop {
            match self.ring.submit() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        if let Err(e) = submitted {
            // Unsubmitted entries would later point at freed buffers: drop them with the ring.
            self.ring = IoUring::new(RING_ENTRIES)?;
            return Err(e);
        }
        self.collect(chunks.len())
    }

    fn collect(&mut self, count: usize) -> io::Result<Vec<usize>> {
        let mut written = vec![0usize; count];
        let mut done = 0;
        let mut first_error: Option<io::Error> = None;
        while done < count {
            let ready = self.ring.completion().len();
            if ready == 0 {
                match self.ring.submit_and_wait(1) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            for cqe in self.ring.completion() {
                let res = cqe.result();
                if res >= 0 {
                    written[cqe.user_data() as usize] = res as usize;
                } else {
                    let err = io::Error::from_raw_os_error(-res);
                    // EINTR/EAGAIN: a zero-byte short write that pwritev redoes.
                    let retriable = matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    );
                    if !retriable && first_error.is_none() {
                        first_error = Some(err);
                    }
                }
                done += 1;
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(written),
        }
    }
}

/// Split the remaining iovecs into at most RING_ENTRIES chunks of at most IOV_MAX iovecs.
fn plan_round(iov: &[libc::iovec], mut offset: u64) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < iov.len() && chunks.len() < RING_ENTRIES as usize {
        let iovecs = (iov.len() - start).min(IOV_MAX);
        let bytes = iov[start..start + iovecs].iter().map(|v| v.iov_len).sum();
        chunks.push(Chunk {
            first_iovec: start,
            iovecs,
            offset,
            bytes,
        });
        offset += bytes as u64;
        start += iovecs;
    }
    chunks
}
