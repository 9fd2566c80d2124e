//! Zero-copy transfer of a file range to a socket.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// The most one sendfile(2) call moves.
const SENDFILE_MAX: usize = 0x7fff_f000;

enum Step {
    Sent(usize),
    WouldBlock,
    Eof,
}

fn sendfile_step(file: &File, offset: u64, len: usize, sock_fd: RawFd) -> io::Result<Step> {
    let mut off = offset as libc::off_t;
    loop {
        // SAFETY: plain syscall on fds we borrow; `off` is a valid pointer for its duration.
        let n =
            unsafe { libc::sendfile(sock_fd, file.as_raw_fd(), &mut off, len.min(SENDFILE_MAX)) };
        if n > 0 {
            return Ok(Step::Sent(n as usize));
        }
        if n == 0 {
            return Ok(Step::Eof);
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(Step::WouldBlock),
            _ => return Err(err),
        }
    }
}

/// Send `len` bytes of `file` from `offset` to socket `sock_fd` with sendfile(2), looping on
/// partial writes. On EAGAIN (non-blocking socket) returns the bytes sent so far; the
/// caller retries later. Returns bytes sent (may be < len on EAGAIN or EOF).
pub fn sendfile_some(file: &File, offset: u64, len: usize, sock_fd: RawFd) -> io::Result<usize> {
    let mut sent = 0;
    while sent < len {
        match sendfile_step(file, offset + sent as u64, len - sent, sock_fd)? {
            Step::Sent(n) => sent += n,
            Step::WouldBlock | Step::Eof => break,
        }
    }
    Ok(sent)
}

/// Like `sendfile_some` but waits (poll POLLOUT, up to `timeout_ms` per wait) on EAGAIN until
/// all `len` bytes are sent or EOF.
pub fn sendfile_all(
    file: &File,
    offset: u64,
    len: usize,
    sock_fd: RawFd,
    timeout_ms: i32,
) -> io::Result<usize> {
    let mut sent = 0;
    while sent < len {
        match sendfile_step(file, offset + sent as u64, len - sent, sock_fd)? {
            Step::Sent(n) => sent += n,
            Step::Eof => break,
            Step::WouldBlock => wait_writable(sock_fd, timeout_ms)?,
        }
    }
    Ok(sent)
}

fn wait_writable(fd: RawFd, timeout_ms: i32) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n > 0 {
            return Ok(());
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "socket not writable in time",
            ));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
