//! Kafka's framing: a 4-byte big-endian size, then the request (header + body); a response
//! is a size, a response header and the body a handler produced.
//!
//! A frame is bounded by `socket.request.max.bytes` before any byte of it is buffered, and
//! its buffer grows only as bytes arrive. A frame that cannot be parsed is an error, which
//! closes that connection only.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::transport::Transport;
use crate::handlers;
use crate::response::{Piece, ResponseBody};

/// Frames up to this size get their whole buffer at once (most produce requests fit).
const UPFRONT_FRAME_BYTES: usize = 1 << 20;

/// The frame size a client announced, if it is within `[4, max]` (4: a header's api key,
/// version and correlation id need at least that much to be worth reading).
pub fn check_frame_size(size: i32, max: usize) -> anyhow::Result<usize> {
    match usize::try_from(size) {
        Ok(n) if (4..=max).contains(&n) => Ok(n),
        _ => anyhow::bail!("frame of {size} bytes is outside [4, {max}]"),
    }
}

/// Read a `size`-byte frame body into uninitialised capacity (no zero-filling: it showed
/// as 10 % of produce time). Past `UPFRONT_FRAME_BYTES` the buffer grows as bytes arrive,
/// at most doubling what has been received: a peer that announces a large frame and sends
/// nothing more holds no more memory than it has sent.
pub async fn read_frame<R: AsyncRead + Unpin>(
    stream: &mut R,
    size: usize,
) -> std::io::Result<BytesMut> {
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

/// The api key a frame's header names, if it names a known one (read before the frame is
/// parsed, so that a request that fails is still counted under its API).
#[must_use]
pub fn api_key_of(frame: &[u8]) -> Option<ApiKey> {
    let raw = i16::from_be_bytes([*frame.first()?, *frame.get(1)?]);
    ApiKey::try_from(raw).ok()
}

/// A request whose header has been read.
#[derive(Debug)]
pub struct Request {
    pub key: ApiKey,
    pub header: RequestHeader,
    /// The request body, after the header.
    pub body: Bytes,
}

impl Request {
    #[must_use]
    pub fn response_header_version(&self) -> i16 {
        self.key
            .response_header_version(self.header.request_api_version)
    }
}

#[derive(Debug)]
pub enum Parsed {
    Request(Request),
    /// ApiVersions at a version we do not know: KIP-511 says to answer with v0 framing
    /// so that any client can read our list.
    ApiVersionsFallback {
        correlation_id: i32,
    },
}

/// Parse a frame's request header. An unknown api, or an unsupported version of one
/// (other than ApiVersions), is an error: Kafka closes the connection too.
pub fn parse_request(mut frame: Bytes) -> anyhow::Result<Parsed> {
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
            return Ok(Parsed::ApiVersionsFallback { correlation_id });
        }
        anyhow::bail!("unsupported version {version} of {key:?}");
    }
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))?;
    Ok(Parsed::Request(Request {
        key,
        header,
        body: frame,
    }))
}

/// Write one response: size, header, body (record bytes from files go out with sendfile).
pub async fn write_response(
    transport: &mut Transport,
    header_version: i16,
    correlation_id: i32,
    body: ResponseBody,
) -> anyhow::Result<()> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_len = header.compute_size(header_version)?;
    let total = header_len + body.len();
    let inline_len = match &body {
        ResponseBody::Encoded(b) => b.len(),
        ResponseBody::Pieces(_) => 0,
    };
    let mut head = BytesMut::with_capacity(4 + header_len + inline_len);
    head.put_i32(i32::try_from(total)?);
    header.encode(&mut head, header_version)?;
    match body {
        ResponseBody::Encoded(b) => {
            head.extend_from_slice(&b);
            transport.write_all(&head).await?;
        }
        ResponseBody::Pieces(pieces) => {
            transport.write_all(&head).await?;
            for piece in pieces {
                match piece {
                    Piece::Bytes(mut b) => {
                        while b.has_remaining() {
                            let n = transport.write(&b).await?;
                            b.advance(n);
                        }
                    }
                    Piece::File(slice) => transport.send_file(&slice).await?,
                }
            }
        }
    }
    // A TLS session may still hold encrypted bytes (a no-op on plain sockets).
    transport.flush().await?;
    Ok(())
}

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
