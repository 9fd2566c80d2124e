//! An iovec list that can be advanced past written bytes, and `pwritev` until done.

use std::io;
use std::os::fd::RawFd;

/// Linux's IOV_MAX: the most iovecs one pwritev/writev takes.
pub const IOV_MAX: usize = 1024;

/// iovecs over borrowed buffers; `advance` drops what has been written.
pub struct IoVecs<'a> {
    iov: Vec<libc::iovec>,
    /// Index of the first iovec not yet fully written.
    start: usize,
    _buffers: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> IoVecs<'a> {
    pub fn new(bufs: &[&'a [u8]]) -> IoVecs<'a> {
        let iov = bufs
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        IoVecs {
            iov,
            start: 0,
            _buffers: std::marker::PhantomData,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.iov.len()
    }

    /// The iovecs still to write.
    pub fn remaining(&self) -> &[libc::iovec] {
        &self.iov[self.start..]
    }

    /// Mark `n` more bytes as written.
    pub fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let first = &mut self.iov[self.start];
            if n >= first.iov_len {
                n -= first.iov_len;
                self.start += 1;
            } else {
                // SAFETY: n < iov_len, so the new base stays inside the same buffer.
                first.iov_base = unsafe { first.iov_base.cast::<u8>().add(n) }.cast();
                first.iov_len -= n;
                n = 0;
            }
        }
    }
}

/// pwritev everything in `iov` at `offset`, retrying on EINTR and short writes.
pub fn pwritev_all(fd: RawFd, mut offset: u64, iov: &mut IoVecs<'_>) -> io::Result<()> {
    while !iov.is_empty() {
        let batch = &iov.remaining()[..iov.remaining().len().min(IOV_MAX)];
        // SAFETY: every iovec points into a buffer borrowed for 'a, alive for this call.
        let n = unsafe {
            libc::pwritev(
                fd,
                batch.as_ptr(),
                batch.len() as libc::c_int,
                offset as libc::off_t,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "pwritev wrote nothing",
            ));
        }
        iov.advance(n as usize);
        offset += n as u64;
    }
    Ok(())
}
