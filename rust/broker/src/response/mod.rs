//! What a handler gives back for the connection to write; `fetch` encodes Fetch responses
//! around record bytes that stay in their segment files; `leader_hints` names a refused
//! partition's current leader (KIP-951).

pub mod fetch;
pub mod leader_hints;
pub mod throttle;

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::Encodable;
use kafkalite_core::storage::ReadSlice;

/// One part of a response body: encoded bytes, or record bytes still in a segment file
/// (sent with sendfile, never copied through user space).
#[derive(Debug)]
pub enum Piece {
    Bytes(Bytes),
    File(ReadSlice),
}

/// A response body (without the size prefix and response header, which the server adds).
#[derive(Debug)]
pub enum ResponseBody {
    Encoded(BytesMut),
    Pieces(Vec<Piece>),
}

impl ResponseBody {
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            ResponseBody::Encoded(b) => b.len(),
            ResponseBody::Pieces(pieces) => pieces
                .iter()
                .map(|p| match p {
                    Piece::Bytes(b) => b.len(),
                    Piece::File(s) => s.len as usize,
                })
                .sum(),
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Encode a generated response message at `version`.
pub fn encode<M: Encodable>(message: &M, version: i16) -> anyhow::Result<ResponseBody> {
    let mut buf = BytesMut::with_capacity(message.compute_size(version)?);
    message.encode(&mut buf, version)?;
    Ok(ResponseBody::Encoded(buf))
}
