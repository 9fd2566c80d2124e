//! Building RecordBatch v2 bytes from records (the binding's `build_batch`, tests, the
//! broker's own control and offset records).

use crate::error::Result;
use crate::records::builder::{BatchBuilder, BatchProducer, HeaderRef};
use crate::records::compression::Compression;
use crate::records::record::RecordInput;

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
    let capacity = records.iter().map(size_hint).sum();
    let mut builder = BatchBuilder::new(compression, capacity);
    let mut headers = Vec::new();
    for record in records {
        borrow_headers(&mut headers, record);
        builder.append(
            record.timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &headers,
        )?;
    }
    builder.finish(base_offset, producer)
}

/// The records section alone, offset deltas from 0 and timestamps relative to
/// `base_timestamp` (tests build batches around it by hand).
#[cfg(test)]
pub(super) fn encode_records(
    out: &mut Vec<u8>,
    records: &[RecordInput],
    base_timestamp: i64,
) -> Result<()> {
    use crate::error::Error;
    use crate::records::builder::{to_i32, write_record};

    let mut headers = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let timestamp_delta = record
            .timestamp
            .checked_sub(base_timestamp)
            .ok_or_else(|| {
                Error::InvalidTimestamp(format!(
                    "timestamp {} is too far from the batch's first timestamp {base_timestamp}",
                    record.timestamp
                ))
            })?;
        borrow_headers(&mut headers, record);
        write_record(
            out,
            timestamp_delta,
            to_i32(index)?,
            record.key.as_deref(),
            record.value.as_deref(),
            &headers,
        )?;
    }
    Ok(())
}

fn borrow_headers<'a>(out: &mut Vec<HeaderRef<'a>>, record: &'a RecordInput) {
    out.clear();
    out.extend(record.headers.iter().map(|h| HeaderRef {
        key: &h.key,
        value: h.value.as_deref(),
    }));
}

fn size_hint(record: &RecordInput) -> usize {
    16 + record.key.as_ref().map_or(0, Vec::len) + record.value.as_ref().map_or(0, Vec::len)
}
