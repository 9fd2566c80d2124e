//! io_uring writer: the iovec list goes out as Writev SQEs (up to IOV_MAX iovecs each) at
//! consecutive offsets, submitted together and awaited together. A short completion (rare
//! for regular files) is finished with `pwritev`, which keeps ordering simple.
//!
//! ext4 has no non-blocking buffered writes (no FMODE_BUF_WASYNC), so every buffered Writev
//! is punted to an io-wq worker: perf's io_uring:io_uring_queue_async_work fires once per SQE,
//! block reservation or not. The cost is the hand-off between CPUs, not the copy. Measured
//! (Linux 6.18, ext4, 2 vCPUs, 1 GiB as 1 MiB appends, page cache warm, io::tests::throughput):
//! pwritev 8.8-9.2 GiB/s, io_uring 5.2-6.1 GiB/s; with fresh page-cache pages both ~0.35 GiB/s.
//! Tried without gain (/tmp micro-benchmark): SINGLE_ISSUER with COOP_TASKRUN or
//! DEFER_TASKRUN (5.3-5.9), 1 MiB as 4x256 KiB SQEs (5.6: io-wq serialises writes to one
//! inode, so they do not overlap) or 16x64 KiB (4.7), IOSQE_ASYNC (1.7-6.4, erratic).
//! What closes the gap is keeping the worker on the submitter's CPU (8.4 with the thread and
//! IORING_REGISTER_IOWQ_AFF pinned to one CPU) or spinning on the CQ instead of sleeping
//! (7.6-8.2), but pinning the caller's thread or burning a second CPU per append is not a
//! library's call, and io-wq affinity is per thread, shared by all its rings.

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
    /// Submitting or waiting failed with entries queued or in flight: only dropping the ring
    /// is safe now.
    broken: bool,
}

impl UringWriter {
    pub fn new() -> io::Result<UringWriter> {
        Ok(UringWriter {
            ring: IoUring::new(RING_ENTRIES)?,
            broken: false,
        })
    }

    /// False once the ring failed in a way that leaves it unusable (the write in progress was
    /// finished with `pwritev`); the owner should drop it.
    pub fn usable(&self) -> bool {
        !self.broken
    }

    /// Write everything in `iov` at `offset`. `meanwhile` runs once, on this thread, while
    /// the first round of writes is in flight (or before the writes, when the ring cannot
    /// take them): buffered ext4 writes run on an io-wq worker, so the caller's work there
    /// overlaps the copy into the page cache. It may read the buffers, never write them.
    pub fn write_all(
        &mut self,
        fd: RawFd,
        offset: u64,
        iov: &mut IoVecs<'_>,
        meanwhile: &mut dyn FnMut(),
    ) -> io::Result<()> {
        let mut meanwhile = Some(meanwhile);
        let result = self.write_rounds(fd, offset, iov, &mut meanwhile);
        if let Some(f) = meanwhile.take() {
            f();
        }
        result
    }

    fn write_rounds(
        &mut self,
        fd: RawFd,
        mut offset: u64,
        iov: &mut IoVecs<'_>,
        meanwhile: &mut Option<&mut dyn FnMut()>,
    ) -> io::Result<()> {
        while !iov.is_empty() {
            if self.broken {
                // The ring failed, not the writes: finish without it (rewriting chunks that
                // may have landed is harmless, the bytes are the same).
                return pwritev_all(fd, offset, iov);
            }
            let chunks = plan_round(iov.remaining(), offset);
            let written = match self.round(fd, iov.remaining(), &chunks, meanwhile) {
                Ok(written) => written,
                Err(_) if self.broken => continue,
                Err(e) => return Err(e),
            };
            // Everything before the first short chunk is in place, in order.
            let mut short = false;
            for (chunk, &got) in chunks.iter().zip(&written) {
                iov.advance(got);
                offset += got as u64;
                if got != chunk.bytes {
                    short = true;
                    break;
                }
            }
            if short {
                // Later chunks may have landed too; rewriting them is harmless and
                // leaves the file exactly as a sequential write would.
                return pwritev_all(fd, offset, iov);
            }
        }
        Ok(())
    }

    /// Submit one Writev per chunk, run `meanwhile` if it has not run yet, and wait for all;
    /// bytes written per chunk.
    fn round(
        &mut self,
        fd: RawFd,
        iov: &[libc::iovec],
        chunks: &[Chunk],
        meanwhile: &mut Option<&mut dyn FnMut()>,
    ) -> io::Result<Vec<usize>> {
        if let Err(e) = self.queue(fd, iov, chunks).and_then(|()| self.submit()) {
            // Entries left in the queue would later be submitted pointing at freed buffers:
            // the ring must never be submitted again.
            self.broken = true;
            return Err(e);
        }
        if let Some(f) = meanwhile.take() {
            f();
        }
        self.collect(chunks.len())
    }

    fn queue(&mut self, fd: RawFd, iov: &[libc::iovec], chunks: &[Chunk]) -> io::Result<()> {
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
            // SAFETY: the iovecs and the buffers they point to outlive the submission: every
            // completion is awaited before write_all returns, and a ring that failed to
            // submit or wait is marked broken and never submitted again.
            unsafe { sq.push(&entry) }
                .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        }
        Ok(())
    }

    fn submit(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other.map(drop),
            }
        }
    }

    fn collect(&mut self, count: usize) -> io::Result<Vec<usize>> {
        let mut written = vec![0usize; count];
        let mut done = 0;
        let mut first_error: Option<io::Error> = None;
        while done < count {
            let ready = self.ring.completion().len();
            if ready == 0 {
                self.wait_one()?;
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

    /// Block until a completion is posted. Giving up while writes are in flight would let
    /// the kernel read buffers the caller is about to free, so transient errors are retried:
    /// EINTR, and EAGAIN/EBUSY (completion queue full; the caller drains it before waiting).
    fn wait_one(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e) if is_transient(&e) => {
                    if !self.ring.completion().is_empty() {
                        return Ok(());
                    }
                }
                Err(e) => {
                    self.broken = true;
                    return Err(e);
                }
            }
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
    ) || e.raw_os_error() == Some(libc::EBUSY)
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
