//! Kafka RecordBatch v2 (magic 2): header parsing, validation, offset assignment, record
//! decoding and encoding, compression. Every length read from the wire or disk is checked
//! against the bytes that remain before it is trusted.
//!
//! CONTRACT (storage and the binding code against these signatures; keep them stable).

pub mod batch;
pub mod builder;
pub mod compression;
pub mod encode;
pub mod record;
pub mod record_check;
pub mod varint;
mod xerial;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod test_util;

pub use batch::{
    assign_offsets, check_batch_crcs, validate_batch, validate_batches,
    validate_batches_deferring_crc, BatchHeader, BatchInfo, TimestampType, BATCH_HEADER_LEN,
    LOG_OVERHEAD,
};
pub use builder::{BatchBuilder, BatchProducer, HeaderRef};
pub use compression::Compression;
pub use encode::{encode_batch, encode_producer_batch};
pub use record::{decode_records, visit_records, Header, Record, RecordInput, RecordRef};
pub use record_check::{
    check_batches, check_records_of, validate_records, RecordRules, DEFAULT_MAX_DECOMPRESSED_BYTES,
};
