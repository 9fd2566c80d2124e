//! The byte stream under a connection. Framing reads and writes through `AsyncRead` /
//! `AsyncWrite`; record bytes still in a segment file go out through `send_file`.
//!
//! Only `Plain` exists today. A `Tls` variant (rustls) joins here: reads and writes go
//! through the TLS session, and `send_file` either copies through it, or, with kernel TLS
//! (the session's keys handed to the socket after the handshake), keeps using sendfile on
//! the socket, which is why the sendfile path lives on the transport and not the handler.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use kafkalite_core::storage::ReadSlice;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

pub enum Transport {
    /// PLAINTEXT (and, later, SASL_PLAINTEXT): bytes as they are on the socket.
    Plain(TcpStream),
}

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
            Transport::Plain(stream) => sendfile_to_socket(stream, slice).await,
        }
    }
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
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Plain(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
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
