//! The client's failures, each naming the broker it was talking to.

use std::io;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;
use kafka_protocol::ResponseError;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bootstrap servers: {0}")]
    InvalidBootstrap(String),
    /// Connecting, writing or reading failed, or no answer came in time.
    #[error("broker {broker}: {source}")]
    Io { broker: String, source: io::Error },
    /// The broker's bytes break the protocol (oversized frame, wrong correlation id,
    /// undecodable body); the connection is dropped.
    #[error("broker {broker}: {message}")]
    Protocol { broker: String, message: String },
    #[error("broker {broker} supports {api:?} versions {theirs}, this client {ours}")]
    UnsupportedVersion {
        broker: String,
        api: ApiKey,
        ours: VersionRange,
        theirs: String,
    },
    /// The broker answered with a Kafka error code.
    #[error("broker {broker}: {what} failed with error code {code} ({})", code_name(*code))]
    Broker {
        broker: String,
        what: String,
        code: i16,
    },
    #[error("no broker reachable at {bootstrap} ({errors})")]
    NoBrokerReachable { bootstrap: String, errors: String },
}

impl Error {
    /// The Kafka error code a broker answered with, when that is the failure.
    #[must_use]
    pub fn error_code(&self) -> Option<i16> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the connection the error came from can no longer be used (its stream may
    /// hold half a frame).
    #[must_use]
    pub(crate) fn breaks_connection(&self) -> bool {
        matches!(self, Error::Io { .. } | Error::Protocol { .. })
    }
}

/// Kafka's name for an error code (`OffsetOutOfRange`), as the codec crate spells it.
#[must_use]
pub fn code_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(_)) => "unknown".to_string(),
        Some(e) => format!("{e:?}"),
    }
}
