//! The byte stream under a connection. Framing reads and writes through `AsyncRead` /
//! `AsyncWrite`; record bytes still in a segment file go out through `send_file`.
//!
//! `Plain` is the socket itself and `send_file` is sendfile. `Ktls` is a socket whose TLS
//! session the kernel runs (kTLS, `security::ktls`): reads and writes are plaintext on
//! the socket, the kernel encrypts and decrypts the records, and `send_file` is sendfile
//! too — zero-copy kept under TLS. `Tls` is a rustls session in user space (no kernel TLS,
//! kTLS turned off, or a cipher suite the kernel cannot take): `send_file` reads the file
//! range and encrypts it through rustls. The sendfile path lives on the transport, not
//! the handler, for that reason.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use kafkalite_core::storage::ReadSlice;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use super::handshake_socket::HandshakeSocket;

pub enum Transport {
    /// PLAINTEXT and SASL_PLAINTEXT: bytes as they are on the socket.
    Plain(TcpStream),
    /// SSL and SASL_SSL, after the handshake, encrypted by rustls.
    Tls(Box<tokio_rustls::server::TlsStream<HandshakeSocket>>),
    /// SSL and SASL_SSL, after the handshake, with the session's keys in the kernel.
    Ktls(TcpStream),
}

/// How much of a segment file goes through TLS per write: a few TLS records' worth.
const TLS_FILE_CHUNK_BYTES: usize = 256 * 1024;

impl Transport {
    /// A plaintext transport over an accepted socket (Nagle off: responses are whole).
    pub fn plain(stream: TcpStream) -> Transport {
        let _ = stream.set_nodelay(true);
        Transport::Plain(stream)
    }

    /// Send `slice` of a segment file with sendfile, waiting for writability on EAGAIN.
    /// If the file turns out shorter (truncated under us) this fails and the connection
    /// must close: the frame length is already on the wire.
    pub async fn send_file(&mut self, slice: &ReadSlice) -> anyhow::Result<()> {
        match self {
            Transport::Plain(stream) | Transport::Ktls(stream) => {
                sendfile_to_socket(stream, slice).await
            }
            Transport::Tls(stream) => copy_through(stream.as_mut(), slice).await,
        }
    }
}

/// Send a file range through a TLS session: read it (page cache) and encrypt in user space.
async fn copy_through<W: AsyncWrite + Unpin>(out: &mut W, slice: &ReadSlice) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    use tokio::io::AsyncWriteExt;
    let mut buf = vec![0u8; TLS_FILE_CHUNK_BYTES.min(slice.len as usize)];
    let mut sent: u64 = 0;
    while sent < slice.len {
        let want = ((slice.len - sent) as usize).min(buf.len());
        let n = slice
            .file
            .read_at(&mut buf[..want], slice.position + sent)?;
        if n == 0 {
            anyhow::bail!("segment ended before the promised {} bytes", slice.len);
        }
        out.write_all(&buf[..n]).await?;
        sent += n as u64;
    }
    Ok(())
}

async fn sendfile_to_socket(stream: &TcpStream, slice: &ReadSlice) -> anyhow::Result<()> {
    let fd = stream.as_raw_fd();
    let mut sent: u64 = 0;
    while sent < slice.len {
        let remaining = (slice.len - sent) as usize;
        let position = slice.position + sent;
        let n = stream.try_io(Interest::WRITABLE, || {
            let n = kafkalite_core::io::sendfile_some(&slice.file, position, remaining, fd)?;
            if n == 0 {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(n)
            }
        });
        match n {
            Ok(n) => sent += n as u64,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                stream.writable().await?;
                // A writable socket that still takes nothing means the file ended early.
                let probe =
                    kafkalite_core::io::sendfile_some(&slice.file, position, remaining, fd)?;
                if probe == 0 && slice.file.metadata()?.len() <= position {
                    anyhow::bail!("segment ended before the promised {} bytes", slice.len);
                }
                sent += probe as u64;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Transport::Ktls(s) => match Pin::new(s).poll_read(cx, buf) {
                // A record other than application data (close_notify or another alert, a
                // TLS 1.3 KeyUpdate the kernel cannot follow) fails a plain read with EIO:
                // the session cannot go on, and the connection ends as at end of stream.
                Poll::Ready(Err(e)) if e.raw_os_error() == Some(libc::EIO) => Poll::Ready(Ok(())),
                other => other,
            },
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Transport::Ktls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
            Transport::Ktls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Plain(s) | Transport::Ktls(s) => s.is_write_vectored(),
            Transport::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Transport::Ktls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Transport::Ktls(s) => {
                // close_notify first, as rustls sends it; best effort (a full socket
                // buffer or a gone peer only costs the peer a clean end).
                let _ = crate::security::ktls::sockopt::send_close_notify(s.as_raw_fd());
                Pin::new(s).poll_shutdown(cx)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// Bytes written and file ranges sent arrive in order on the peer's socket.
    /// A client socket and the server side of its connection, over loopback.
    async fn connected_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn plain_transport_writes_bytes_and_file_ranges() {
        let (client, server) = connected_pair().await;
        let mut file = tempfile::tempfile().unwrap();
        let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&content).unwrap();
        let slice = ReadSlice {
            file: std::sync::Arc::new(file),
            position: 7,
            len: 250_000,
            first_offset: 0,
        };
        let reader = tokio::spawn(async move {
            let mut client = client;
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut transport = Transport::plain(server);
        transport.write_all(b"head").await.unwrap();
        transport.send_file(&slice).await.unwrap();
        transport.shutdown().await.unwrap();
        drop(transport);
        let got = reader.await.unwrap();
        assert_eq!(&got[..4], b"head");
        assert_eq!(&got[4..], &content[7..250_007]);
    }

    #[tokio::test]
    async fn send_file_fails_when_the_file_is_shorter_than_promised() {
        let (client, server) = connected_pair().await;
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[1u8; 100]).unwrap();
        let slice = ReadSlice {
            file: std::sync::Arc::new(file),
            position: 50,
            len: 200,
            first_offset: 0,
        };
        let reader = tokio::spawn(async move {
            let mut client = client;
            let mut got = Vec::new();
            let _ = client.read_to_end(&mut got).await;
            got.len()
        });
        let mut transport = Transport::plain(server);
        let err = transport.send_file(&slice).await.unwrap_err();
        assert!(err.to_string().contains("segment ended"), "{err}");
        drop(transport);
        assert_eq!(reader.await.unwrap(), 50);
    }
}
