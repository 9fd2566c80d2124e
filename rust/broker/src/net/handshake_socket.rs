//! The socket under a TLS session, able to hand rustls one TLS record at a time while the
//! handshake runs.
//!
//! tokio-rustls reads the socket until it would block, even once the handshake is done,
//! so records a client sends right behind its Finished (a pipelined first request) would
//! end up decrypted, or half-read, inside rustls — where they cannot follow the session's
//! keys into the kernel (kTLS). Paced, this socket ends each read at a record boundary
//! and, after each whole record, answers one read with "not yet" (waking the task at once),
//! so rustls processes that record and tokio-rustls sees the handshake finish before
//! another byte leaves the kernel. After the handshake the connection calls `unpace` and
//! reads go straight through.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A TLS record header: content type (1), version (2), length (2).
const RECORD_HEADER_BYTES: usize = 5;

pub struct HandshakeSocket {
    stream: TcpStream,
    paced: bool,
    /// The header of the record being read (its first `header_filled` bytes so far).
    header: [u8; RECORD_HEADER_BYTES],
    header_filled: usize,
    /// Bytes of the current record's body not read yet.
    body_left: usize,
    /// A whole record was just delivered: the next read says "not yet" once.
    pause: bool,
}

impl HandshakeSocket {
    /// `paced`: deliver records one at a time (for a session that may go to the kernel).
    #[must_use]
    pub fn new(stream: TcpStream, paced: bool) -> HandshakeSocket {
        HandshakeSocket {
            stream,
            paced,
            header: [0; RECORD_HEADER_BYTES],
            header_filled: 0,
            body_left: 0,
            pause: false,
        }
    }

    /// Whether part of a record has been handed to rustls and the rest not (rustls then
    /// holds ciphertext the kernel would never see).
    #[must_use]
    pub fn mid_record(&self) -> bool {
        self.header_filled > 0 || self.body_left > 0
    }

    /// From now on, reads go straight to the socket.
    pub fn unpace(&mut self) {
        self.paced = false;
    }

    #[must_use]
    pub fn get_ref(&self) -> &TcpStream {
        &self.stream
    }

    #[must_use]
    pub fn into_inner(self) -> TcpStream {
        self.stream
    }

    /// Account for `got`, the bytes just read into the caller's buffer.
    fn advance(&mut self, got: &[u8]) {
        if self.header_filled < RECORD_HEADER_BYTES {
            self.header[self.header_filled..self.header_filled + got.len()].copy_from_slice(got);
            self.header_filled += got.len();
            if self.header_filled == RECORD_HEADER_BYTES {
                self.body_left = usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
            }
        } else {
            self.body_left -= got.len();
        }
        if self.header_filled == RECORD_HEADER_BYTES && self.body_left == 0 {
            self.header_filled = 0;
            self.pause = true;
        }
    }
}

impl AsyncRead for HandshakeSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.paced {
            return Pin::new(&mut this.stream).poll_read(cx, buf);
        }
        if this.pause {
            this.pause = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let want = if this.header_filled < RECORD_HEADER_BYTES {
            RECORD_HEADER_BYTES - this.header_filled
        } else {
            this.body_left
        };
        let limit = want.min(buf.remaining());
        if limit == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            std::task::ready!(this.stream.poll_read_ready(cx))?;
            let dst = buf.initialize_unfilled_to(limit);
            match this.stream.try_read(dst) {
                Ok(n) => {
                    this.advance(&dst[..n]);
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for HandshakeSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
