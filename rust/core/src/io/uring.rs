//! io_uring writer: the iovec list goes out as Writev SQEs (up to IOV_MAX iovecs each) at
//! consecutive offsets, submitted together and awaited together. A short completion (rare
//! for regular files) is finished with `pwritev`, which keeps ordering simple.
//!
//! ext4 has no non-blocking buffered writes (no FMODE_BUF_WASYNC), so every buffered Writev
//! is punted to an io-wq worker: perf's io_uring:io_uring_queue_async_work fires once per SQE,
//! block reservation or not. The copy into the page cache then runs on another CPU while the
//! submitter checks CRCs (`meanwhile`); what is lost is the hand-off: waking the worker, and
//! telling the submitter about the completion. On a VM whose idle vCPUs halt, each of those
//! is an IPI and a vCPU resume.
//!
//! So the submitter polls the completion queue for the hand-off's length (`poll_budget`)
//! instead of sleeping in `io_uring_enter` at once, and the ring is set up with
//! COOP_TASKRUN and TASKRUN_FLAG: the completion's task work waits for this thread to enter
//! the kernel (which the flag tells `poll` to do) rather than interrupting it. With one
//! usable CPU the worker needs the submitter's CPU, so nothing is polled. Measured on Linux
//! 6.18, ext4, 2 vCPUs: appending a 69-byte batch (one record) from Python took 18-20 us
//! sleeping, about 12 us polling (pwritev: 1.8 us); in a /tmp micro-benchmark a bare
//! 100-byte round trip took 24 us sleeping, 7.9 us polling, 2.8 us polling with COOP_TASKRUN.
//!
//! Polling no longer grows with the write: it used to last about as long as the copy
//! should take (up to 1 ms), and a large write then cost the copy twice over, once in the
//! io-wq worker and once spinning beside it. Kafka's ProducerPerformance (1 MiB batches,
//! 4 GiB) cost the broker 2.9-3.0 CPU-seconds per GiB that way, 1.4 with `pwritev`.
//! Tried without gain for ~1 MiB appends: DEFER_TASKRUN, 1 MiB as 4x256 KiB SQEs (io-wq
//! serialises writes to one inode) or 16x64 KiB, IOSQE_ASYNC (erratic), the io-wq worker
//! pinned to the submitter's CPU with the CRCs on a helper thread (wake-affine placement
//! puts the helper on the busy CPU), and extending the file size with the block
//! reservation as fio does.

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use crate::io::iovecs::{pwritev_all, IoVecs, IOV_MAX};

const RING_ENTRIES: u32 = 16;

/// Polling covers the hand-off to the io-wq worker and back (a few us measured, see the
/// module doc; the margin covers a busy machine). A write still running after it is waited
/// for asleep: spinning through the copy would spend a second CPU on it.
const POLL_HANDOFF: Duration = Duration::from_micros(50);

/// How long to poll the completion queue before sleeping; zero when this thread can only
/// run on one CPU (the io-wq worker needs that CPU).
fn poll_budget() -> Duration {
    static CPUS: OnceLock<usize> = OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
    if cpus < 2 {
        return Duration::ZERO;
    }
    POLL_HANDOFF
}

/// One SQE's share of the iovec list.
#[derive(Clone, Copy)]
struct Chunk {
    first_iovec: usize,
    iovecs: usize,
    offset: u64,
    bytes: usize,
}

/// This thread's ring: made on first use, dropped when it breaks, never retried on a
/// thread where it could not be made.
enum ThreadRing {
    Unmade,
    Ready(Box<UringWriter>),
    Unavailable,
}

thread_local! {
    // One ring per appending thread, shared by every file it writes: a ring costs a file
    // descriptor and locked memory, and one per segment made a broker with thousands of
    // partitions run out of descriptors (three per written partition instead of one).
    static RING: std::cell::RefCell<ThreadRing> = const { std::cell::RefCell::new(ThreadRing::Unmade) };
}

/// `UringWriter::write_all` on this thread's ring. `None` when this thread has no ring
/// (one cannot be made, e.g. the locked-memory limit is reached): nothing was written and
/// `meanwhile` has not run, so the caller writes another way.
pub fn write_all_on_thread_ring(
    fd: RawFd,
    offset: u64,
    iov: &mut IoVecs<'_>,
    meanwhile: &mut dyn FnMut(),
) -> Option<io::Result<()>> {
    RING.with(|cell| {
        let mut ring = cell.borrow_mut();
        if matches!(*ring, ThreadRing::Unmade) {
            *ring = UringWriter::new()
                .map_or(ThreadRing::Unavailable, |w| ThreadRing::Ready(Box::new(w)));
        }
        let ThreadRing::Ready(writer) = &mut *ring else {
            return None;
        };
        let result = writer.write_all(fd, offset, iov, meanwhile);
        if !writer.usable() {
            // The write was finished with pwritev; the next one gets a fresh ring.
            *ring = ThreadRing::Unmade;
        }
        Some(result)
    })
}

pub struct UringWriter {
    ring: IoUring,
    /// Submitting or waiting failed with entries queued or in flight: only dropping the ring
    /// is safe now.
    broken: bool,
}

impl UringWriter {
    pub fn new() -> io::Result<UringWriter> {
        // COOP_TASKRUN: completion work is not signalled to this thread with an IPI but run
        // when it next enters the kernel, and TASKRUN_FLAG tells `poll` when to enter.
        // Kernels before 5.19 refuse the flags; a plain ring works there.
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(RING_ENTRIES)
            .or_else(|_| IoUring::new(RING_ENTRIES))?;
        Ok(UringWriter {
            ring,
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
        let polling_since = Instant::now();
        if let Some(f) = meanwhile.take() {
            f();
        }
        self.poll(chunks.len(), polling_since + poll_budget());
        self.collect(chunks.len())
    }

    /// Spin until `count` completions are posted or `deadline` passes (see the module doc:
    /// sleeping would halt this CPU and make the completion wake it up again), yielding to
    /// other runnable threads as it goes. Completion work the kernel left for this thread
    /// (TASKRUN_FLAG) is run by entering the ring.
    fn poll(&mut self, count: usize, deadline: Instant) {
        const CHECKS_PER_CLOCK_READ: u32 = 64;
        loop {
            for _ in 0..CHECKS_PER_CLOCK_READ {
                if self.ring.completion().len() >= count {
                    return;
                }
                if self.ring.submission().taskrun() {
                    // Failure is left to `collect`, which waits and handles errors.
                    if self.ring.submit_and_wait(0).is_err() {
                        return;
                    }
                    continue;
                }
                std::hint::spin_loop();
            }
            if Instant::now() >= deadline {
                return;
            }
            // Let any other runnable thread on this CPU (a broker's network thread) go first.
            std::thread::yield_now();
        }
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
