//! Listeners, connections and framing.
//!
//! Each connection handles one request at a time, in order, as Kafka does. A frame is
//! bounded by `socket.request.max.bytes` before any byte of it is buffered; a frame that
//! cannot be parsed or answered closes that connection only.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::handlers::{self, api_versions};
use crate::log_maintenance::{self, LogMaintenance, PartitionCompaction};
use crate::response::{Piece, ResponseBody};
use crate::state::BrokerState;

tokio::task_local! {
    /// The peer address of the connection whose request is being handled.
    static PEER: SocketAddr;
}

/// The address of the client whose request is being handled (`None` outside a connection).
#[must_use]
pub fn peer_addr() -> Option<SocketAddr> {
    PEER.try_with(|p| *p).ok()
}

/// A running broker: its runtime, listeners and state.
pub struct Broker {
    runtime: Option<tokio::runtime::Runtime>,
    state: Arc<BrokerState>,
    shutdown: watch::Sender<bool>,
    addrs: Vec<(String, SocketAddr)>,
    maintenance: Option<LogMaintenance>,
}

impl Broker {
    /// Open the logs, bind every listener and start serving.
    pub fn start(config: BrokerConfig, worker_threads: usize) -> anyhow::Result<Broker> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads.max(1))
            .thread_name("kafkalite-broker")
            .enable_all()
            .build()?;
        let listeners = config.listeners.clone();
        let state = BrokerState::open(config)?;
        let (shutdown, watcher) = watch::channel(false);
        let mut addrs = Vec::new();
        for listener in listeners {
            let bound = runtime
                .block_on(TcpListener::bind(listener.bind))
                .map_err(|e| {
                    anyhow::anyhow!(
                        "cannot listen on {} ({}): {e}",
                        listener.bind,
                        listener.name
                    )
                })?;
            let local = bound.local_addr()?;
            addrs.push((listener.name.clone(), local));
            runtime.spawn(accept_loop(bound, Arc::clone(&state), watcher.clone()));
        }
        let _ = state.advertised.set(advertised_for(&state.config, &addrs));
        let maintenance = Some(LogMaintenance::start(Arc::clone(&state))?);
        Ok(Broker {
            runtime: Some(runtime),
            state,
            shutdown,
            addrs,
            maintenance,
        })
    }

    /// Listener name and bound address (ephemeral ports resolved).
    #[must_use]
    pub fn addresses(&self) -> &[(String, SocketAddr)] {
        &self.addrs
    }

    #[must_use]
    pub fn state(&self) -> &Arc<BrokerState> {
        &self.state
    }

    /// Run a cleaner pass now over `topic`'s partitions (every topic when `None`); see
    /// `log_maintenance::compact`.
    #[must_use]
    pub fn compact(&self, topic: Option<&str>, force: bool) -> Vec<PartitionCompaction> {
        log_maintenance::compact(&self.state, topic, force)
    }

    /// Stop accepting, drop connections, close every log cleanly.
    pub fn shutdown(&mut self) -> anyhow::Result<()> {
        let Some(runtime) = self.runtime.take() else {
            return Ok(());
        };
        // A cleaner pass in progress finishes (or is discarded) before the logs close.
        if let Some(mut maintenance) = self.maintenance.take() {
            maintenance.stop();
        }
        let _ = self.shutdown.send(true);
        runtime.shutdown_timeout(Duration::from_secs(5));
        self.state.close()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        let state = Arc::clone(&state);
                        let shutdown = shutdown.clone();
                        tokio::spawn(PEER.scope(peer, async move {
                            let _ = serve(stream, state, shutdown).await;
                        }));
                    }
                    // Out of fds and the like: back off instead of spinning.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn serve(
    mut stream: TcpStream,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let max = state.config.socket_request_max_bytes;
    loop {
        let size = tokio::select! {
            r = stream.read_i32() => match r {
                Ok(n) => n,
                Err(_) => return Ok(()),
            },
            _ = shutdown.changed() => return Ok(()),
        };
        if size < 4 || size as usize > max {
            anyhow::bail!("frame of {size} bytes is outside [4, {max}]");
        }
        let frame = read_frame(&mut stream, size as usize).await?.freeze();
        // Produce with acks=0 expects no response at all.
        if let Some((header_version, correlation_id, body)) = handle_frame(&state, frame).await? {
            write_response(&mut stream, header_version, correlation_id, body).await?;
        }
    }
}

/// Frames up to this size get their whole buffer at once (most produce requests fit).
const UPFRONT_FRAME_BYTES: usize = 1 << 20;

/// Read a `size`-byte frame body into uninitialised capacity (no zero-filling: it showed
/// as 10 % of produce time). Past `UPFRONT_FRAME_BYTES` the buffer grows as bytes arrive,
/// at most doubling what has been received: a peer that announces a large frame and sends
/// nothing more holds no more memory than it has sent.
async fn read_frame(stream: &mut TcpStream, size: usize) -> std::io::Result<BytesMut> {
    let mut frame = BytesMut::with_capacity(size.min(UPFRONT_FRAME_BYTES));
    while frame.len() < size {
        let missing = size - frame.len();
        if frame.capacity() == frame.len() {
            frame.reserve(frame.len().min(missing));
        }
        // Never past this frame: the next one's bytes stay in the socket.
        let n = (&mut *stream)
            .take(missing as u64)
            .read_buf(&mut frame)
            .await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(frame)
}

/// Parse the request header and dispatch. `Ok(None)`: nothing to send back.
async fn handle_frame(
    state: &Arc<BrokerState>,
    mut frame: Bytes,
) -> anyhow::Result<Option<(i16, i32, ResponseBody)>> {
    if frame.len() < 8 {
        anyhow::bail!("request shorter than a header");
    }
    let key_raw = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let Ok(key) = ApiKey::try_from(key_raw) else {
        anyhow::bail!("unknown api key {key_raw}");
    };
    let Some((min, max)) = handlers::supported_range(key) else {
        anyhow::bail!("unsupported api {key:?}");
    };
    if version < min || version > max {
        if key == ApiKey::ApiVersions {
            // KIP-511: answer with v0 framing so any client can read our list.
            return Ok(Some((
                0,
                correlation_id,
                api_versions::unsupported_version_response()?,
            )));
        }
        anyhow::bail!("unsupported version {version} of {key:?}");
    }
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))?;
    let response_header_version = key.response_header_version(version);
    let body = handlers::dispatch(state, &header, key, frame).await?;
    Ok(body.map(|b| (response_header_version, correlation_id, b)))
}

async fn write_response(
    stream: &mut TcpStream,
    header_version: i16,
    correlation_id: i32,
    body: ResponseBody,
) -> anyhow::Result<()> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_len = header.compute_size(header_version)?;
    let total = header_len + body.len();
    let mut head = BytesMut::with_capacity(
        4 + header_len
            + if let ResponseBody::Encoded(b) = &body {
                b.len()
            } else {
                0
            },
    );
    head.put_i32(i32::try_from(total)?);
    header.encode(&mut head, header_version)?;
    match body {
        ResponseBody::Encoded(b) => {
            head.extend_from_slice(&b);
            stream.write_all(&head).await?;
        }
        ResponseBody::Pieces(pieces) => {
            stream.write_all(&head).await?;
            for piece in pieces {
                match piece {
                    Piece::Bytes(mut b) => {
                        while b.has_remaining() {
                            let n = stream.write(&b).await?;
                            b.advance(n);
                        }
                    }
                    Piece::File(slice) => send_file(stream, &slice).await?,
                }
            }
        }
    }
    Ok(())
}

/// sendfile a segment range to the (non-blocking) socket, waiting for writability on
/// EAGAIN. If the file turns out shorter (truncated under us) the connection is closed:
/// the frame length is already on the wire.
async fn send_file(
    stream: &mut TcpStream,
    slice: &kafkalite_core::storage::ReadSlice,
) -> anyhow::Result<()> {
    let fd = stream.as_raw_fd();
    let mut sent: u64 = 0;
    while sent < slice.len {
        let remaining = (slice.len - sent) as usize;
        let position = slice.position + sent;
        let n = stream.try_io(Interest::WRITABLE, || {
            let n = kafkalite_core::io::sendfile_some(&slice.file, position, remaining, fd)?;
            if n == 0 {
                Err(std::io::ErrorKind::WouldBlock.into())
            } else {
                Ok(n)
            }
        });
        match n {
            Ok(n) => sent += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                stream.writable().await?;
                // A writable socket that still takes nothing means the file ended early.
                let probe =
                    kafkalite_core::io::sendfile_some(&slice.file, position, remaining, fd)?;
                if probe == 0 && file_len(&slice.file)? <= position {
                    anyhow::bail!("segment ended before the promised {} bytes", slice.len);
                }
                sent += probe as u64;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn file_len(file: &std::fs::File) -> std::io::Result<u64> {
    Ok(file.metadata()?.len())
}

impl Broker {
    /// What Metadata tells clients: `advertised.listeners`, else each bound address (a
    /// wildcard bind is advertised as 127.0.0.1, since nothing better is known).
    #[must_use]
    pub fn advertised_listeners(&self) -> Vec<(String, String, u16)> {
        self.state.advertised.get().cloned().unwrap_or_default()
    }
}

#[must_use]
pub fn advertised_for(
    config: &BrokerConfig,
    addrs: &[(String, SocketAddr)],
) -> Vec<(String, String, u16)> {
    if !config.advertised.is_empty() {
        return config.advertised.clone();
    }
    addrs
        .iter()
        .map(|(name, addr)| {
            let host = if addr.ip().is_unspecified() {
                "127.0.0.1".to_string()
            } else {
                addr.ip().to_string()
            };
            (name.clone(), host, addr.port())
        })
        .collect()
}
