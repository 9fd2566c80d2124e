//! One error type for the core; each variant maps to a Kafka error code so the broker and the
//! Python binding translate failures without string matching.

use std::io;

use crate::error_codes as codes;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes that do not form a valid RecordBatch v2 (bad size, CRC, magic, attributes).
    #[error("corrupt record: {0}")]
    CorruptRecord(String),
    /// A well-formed batch that breaks a rule (e.g. keyless record on a compacted topic).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Keyless records on a compacted topic: their indexes within their batch.
    #[error("Compacted topic cannot accept message without key (record(s) {records:?})")]
    KeylessRecords { records: Vec<i32> },
    #[error("message too large: {size} bytes exceeds the limit of {limit} bytes")]
    MessageTooLarge { size: usize, limit: usize },
    #[error("offset {offset} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    #[error("unsupported compression type {0}")]
    UnsupportedCompression(i16),
    #[error("invalid timestamp: {0}")]
    InvalidTimestamp(String),
    /// Records whose CreateTime lies outside `message.timestamp.before.max.ms` /
    /// `message.timestamp.after.max.ms` of the broker's clock: (index within their batch,
    /// Kafka's message for it).
    #[error("One or more records have been rejected due to invalid timestamp")]
    TimestampsOutOfRange { records: Vec<(i32, String)> },
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    InvalidConfig {
        key: String,
        value: String,
        reason: String,
    },
    /// An idempotent producer's batch whose epoch is older than the one last seen; the
    /// message is the whole text a client sees.
    #[error("{0}")]
    InvalidProducerEpoch(String),
    /// An idempotent producer's batch whose sequence does not follow the last one.
    #[error("{0}")]
    OutOfOrderSequence(String),
    /// A transaction marker from a coordinator older than the one that wrote the last.
    #[error("{0}")]
    CoordinatorFenced(String),
    /// Another broker or process holds the directory's lock file (`storage::dir_lock`).
    #[error("log dir {} is in use by another kafkalite broker or process (pid {holder})", dir.display())]
    LogDirInUse {
        dir: std::path::PathBuf,
        holder: String,
    },
    #[error("log is closed")]
    Closed,
    #[error("storage error: {0}")]
    Io(#[from] io::Error),
}

impl Error {
    /// The Kafka protocol error code that a broker returns for this failure.
    #[must_use]
    pub fn kafka_code(&self) -> i16 {
        match self {
            Error::OffsetOutOfRange { .. } => codes::OFFSET_OUT_OF_RANGE,
            Error::CorruptRecord(_) => codes::CORRUPT_MESSAGE,
            Error::MessageTooLarge { .. } => codes::MESSAGE_TOO_LARGE,
            Error::InvalidTimestamp(_) | Error::TimestampsOutOfRange { .. } => {
                codes::INVALID_TIMESTAMP
            }
            Error::InvalidConfig { .. } => codes::INVALID_CONFIG,
            Error::OutOfOrderSequence(_) => codes::OUT_OF_ORDER_SEQUENCE_NUMBER,
            Error::InvalidProducerEpoch(_) => codes::INVALID_PRODUCER_EPOCH,
            Error::CoordinatorFenced(_) => codes::TRANSACTION_COORDINATOR_FENCED,
            Error::Closed | Error::Io(_) | Error::LogDirInUse { .. } => codes::KAFKA_STORAGE_ERROR,
            Error::UnsupportedCompression(_) => codes::UNSUPPORTED_COMPRESSION_TYPE,
            Error::InvalidRecord(_) | Error::KeylessRecords { .. } => codes::INVALID_RECORD,
        }
    }

    pub fn corrupt(msg: impl Into<String>) -> Self {
        Error::CorruptRecord(msg.into())
    }
}
