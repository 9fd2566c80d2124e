//! The three socket calls kTLS needs: attach the `tls` upper-layer protocol, install a
//! direction's keys, and send a TLS alert (records other than application data go out
//! through `sendmsg` with a record-type control message). The only `unsafe` of kTLS.

use std::io;
use std::os::fd::RawFd;

use super::crypto_info::CryptoInfo;

/// linux/tls.h: the `SOL_TLS` options for the two directions, and the control message
/// that sets the type of the record a `sendmsg` writes.
const TLS_TX: libc::c_int = 1;
const TLS_RX: libc::c_int = 2;
const TLS_SET_RECORD_TYPE: libc::c_int = 1;
/// TLS record content type of an alert (RFC 8446 §5.1).
const CONTENT_TYPE_ALERT: u8 = 21;

/// Which way a `CryptoInfo` applies.
#[derive(Clone, Copy, Debug)]
pub enum Direction {
    Transmit,
    Receive,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `setsockopt(TCP_ULP, "tls")`: until keys are installed the socket still carries
/// plain bytes, so a failure here leaves the connection usable as it was.
pub fn attach_tls_ulp(fd: RawFd) -> io::Result<()> {
    let ulp = b"tls";
    // SAFETY: `fd` is an open socket and the pointer and length describe `ulp`.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TCP,
            libc::TCP_ULP,
            ulp.as_ptr().cast(),
            ulp.len() as libc::socklen_t,
        )
    })
}

/// Install one direction's keys: from now on the kernel encrypts what is written
/// (`Transmit`) or decrypts what is read (`Receive`).
pub fn install(fd: RawFd, direction: Direction, info: &CryptoInfo) -> io::Result<()> {
    let option = match direction {
        Direction::Transmit => TLS_TX,
        Direction::Receive => TLS_RX,
    };
    let bytes = info.as_bytes();
    // SAFETY: `fd` is an open socket; the kernel copies `bytes.len()` bytes from `bytes`,
    // laid out as linux/tls.h's `tls12_crypto_info_*` (see `crypto_info`).
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TLS,
            option,
            bytes.as_ptr().cast(),
            bytes.len() as libc::socklen_t,
        )
    })
}

/// Send a warning-level close_notify alert (RFC 8446 §6.1) on a kTLS socket, without
/// blocking: the peer then sees a clean end of the stream, as rustls would have sent.
pub fn send_close_notify(fd: RawFd) -> io::Result<()> {
    let mut alert = [1u8, 0u8]; // level warning, description close_notify
    let mut iov = libc::iovec {
        iov_base: alert.as_mut_ptr().cast(),
        iov_len: alert.len(),
    };
    // Room for one control message carrying one byte, aligned as cmsghdr needs.
    let mut control = [0u64; 4];
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(1) } as usize;
    assert!(space <= size_of_val(&control), "control buffer too small");
    // SAFETY: an all-zero msghdr is valid (no name, no buffers) before it is filled in.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg_control points at `space` writable, aligned bytes, so the first header
    // and its one data byte lie inside it; sendmsg reads only what msg describes, all of
    // which outlives the call.
    let sent = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_TLS;
        (*cmsg).cmsg_type = TLS_SET_RECORD_TYPE;
        (*cmsg).cmsg_len = libc::CMSG_LEN(1) as _;
        *libc::CMSG_DATA(cmsg) = CONTENT_TYPE_ALERT;
        libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
