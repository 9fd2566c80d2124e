//! Building RecordBatch v2 bytes from records (the binding's `build_batch`, tests, the
//! broker's own control and offset records).

use crate::error::{Error, Result};
use crate::records::batch::{write_crc, BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use crate::records::compression::compress;
use crate::records::record::RecordInput;
use crate::records::varint::{write_varint, write_varlong};
use crate::records::Compression;

/// The idempotent producer a batch is stamped with: its producer id and epoch (from
/// InitProducerId) and the sequence number of the batch's first record.
/// [`BatchProducer::NONE`] (all -1) is a batch of no idempotent producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchProducer {
    pub id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
}

impl BatchProducer {
    pub const NONE: BatchProducer = BatchProducer {
        id: -1,
        epoch: -1,
        base_sequence: -1,
    };
}

impl Default for BatchProducer {
    fn default() -> Self {
        BatchProducer::NONE
    }
}

/// Build one RecordBatch v2 (CreateTime, producer id -1, CRC filled) at `base_offset`.
///
/// baseTimestamp is the first record's timestamp and maxTimestamp the largest, as the
/// Java producer writes them. An empty `records` is `Error::InvalidRecord`: Kafka has no
/// producer batch without records.
pub fn encode_batch(
    records: &[RecordInput],
    compression: Compression,
    base_offset: i64,
) -> Result<Vec<u8>> {
    encode_producer_batch(records, compression, base_offset, BatchProducer::NONE)
}

/// As [`encode_batch`], stamped with `producer`'s id, epoch and base sequence (the CRC
/// covers them): the batch an idempotent producer sends.
pub fn encode_producer_batch(
    records: &[RecordInput],
    compression: Compression,
    base_offset: i64,
    producer: BatchProducer,
) -> Result<Vec<u8>> {
    let first = records
        .first()
        .ok_or_else(|| Error::InvalidRecord("a batch needs at least one record".into()))?;
    let base_timestamp = first.timestamp;
    let max_timestamp = records
        .iter()
        .map(|r| r.timestamp)
        .max()
        .unwrap_or(base_timestamp);
    let count = to_i32(records.len())?;

    let mut out = vec![0u8; BATCH_HEADER_LEN];
    if compression == Compression::None {
        encode_records(&mut out, records, base_timestamp)?;
    } else {
        let mut plain = Vec::new();
        encode_records(&mut plain, records, base_timestamp)?;
        out.extend_from_slice(&compress(compression, &plain)?);
    }

    let header = BatchHeader {
        base_offset,
        batch_length: to_i32(out.len() - LOG_OVERHEAD)?,
        partition_leader_epoch: -1,
        magic: MAGIC_V2,
        crc: 0,
        attributes: compression.attribute_bits(),
        last_offset_delta: count - 1,
        base_timestamp,
        max_timestamp,
        producer_id: producer.id,
        producer_epoch: producer.epoch,
        base_sequence: producer.base_sequence,
        records_count: count,
    };
    header.write_to(&mut out);
    write_crc(&mut out);
    Ok(out)
}

pub(super) fn encode_records(
    out: &mut Vec<u8>,
    records: &[RecordInput],
    base_timestamp: i64,
) -> Result<()> {
    // One body buffer reused across records: the length prefix needs the body's size.
    let mut body = Vec::new();
    for (index, record) in records.iter().enumerate() {
        body.clear();
        encode_record_body(&mut body, record, to_i32(index)?, base_timestamp)?;
        write_varint(out, to_i32(body.len())?);
        out.extend_from_slice(&body);
    }
    Ok(())
}

fn encode_record_body(
    body: &mut Vec<u8>,
    record: &RecordInput,
    offset_delta: i32,
    base_timestamp: i64,
) -> Result<()> {
    let timestamp_delta = record
        .timestamp
        .checked_sub(base_timestamp)
        .ok_or_else(|| {
            Error::InvalidTimestamp(format!(
                "timestamp {} is too far from the batch's first timestamp {base_timestamp}",
                record.timestamp
            ))
        })?;
    body.push(0); // attributes
    write_varlong(body, timestamp_delta);
    write_varint(body, offset_delta);
    write_nullable(body, record.key.as_deref())?;
    write_nullable(body, record.value.as_deref())?;
    write_varint(body, to_i32(record.headers.len())?);
    for header in &record.headers {
        write_nullable(body, Some(&header.key))?;
        write_nullable(body, header.value.as_deref())?;
    }
    Ok(())
}

fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) -> Result<()> {
    match bytes {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, to_i32(bytes.len())?);
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}

/// Every size on the wire is an i32.
fn to_i32(len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| Error::MessageTooLarge {
        size: len,
        limit: i32::MAX as usize,
    })
}
