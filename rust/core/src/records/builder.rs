//! `BatchBuilder`: one RecordBatch v2 written record by record from borrowed key, value
//! and header slices, as the Java producer's `MemoryRecordsBuilder` does. Each record's
//! size is computed before it is written (`DefaultRecord.sizeInBytes`), so its bytes go
//! straight to their place: no allocation or body copy per record. Writers that hold
//! columns (the Spark sink's Arrow buffers) append rows without first building
//! `RecordInput`s.

use crate::error::{Error, Result};
use crate::records::batch::{write_crc, BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use crate::records::compression::{compress, Compression};
use crate::records::varint::{varint_len, varlong_len, write_varint, write_varlong};

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

/// One record header, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

/// A RecordBatch being filled. Records take offset deltas 0, 1, ... in append order; the
/// batch's base timestamp is the first record's and its max timestamp the largest.
#[derive(Debug)]
pub struct BatchBuilder {
    compression: Compression,
    /// The header's room, then (uncompressed batches) the records section.
    out: Vec<u8>,
    /// The records section of a batch to compress, compressed by `finish`.
    plain: Vec<u8>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// An empty batch; `capacity_bytes` is a hint for its records section.
    #[must_use]
    pub fn new(compression: Compression, capacity_bytes: usize) -> BatchBuilder {
        let mut out = Vec::with_capacity(BATCH_HEADER_LEN + capacity_bytes);
        out.resize(BATCH_HEADER_LEN, 0);
        let plain = if compression == Compression::None {
            Vec::new()
        } else {
            Vec::with_capacity(capacity_bytes)
        };
        BatchBuilder {
            compression,
            out,
            plain,
            count: 0,
            base_timestamp: 0,
            max_timestamp: 0,
        }
    }

    /// An empty batch written into `buffer` (cleared first): a writer that hands finished
    /// batches on as copies keeps its buffers, whose pages are already mapped.
    #[must_use]
    pub fn reusing(compression: Compression, mut buffer: Vec<u8>) -> BatchBuilder {
        buffer.clear();
        buffer.resize(BATCH_HEADER_LEN, 0);
        BatchBuilder {
            compression,
            out: buffer,
            plain: Vec::new(),
            count: 0,
            base_timestamp: 0,
            max_timestamp: 0,
        }
    }

    /// Records appended so far.
    #[must_use]
    pub fn records(&self) -> usize {
        self.count as usize
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Uncompressed bytes so far, header included: what batch.size limits.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.out.len() + self.plain.len()
    }

    /// Append one record at `timestamp` (ms). Fails, leaving the batch as it was, when a
    /// length or the timestamp's distance from the first record's does not fit the format.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<()> {
        if self.count == 0 {
            self.base_timestamp = timestamp;
            self.max_timestamp = timestamp;
        }
        let timestamp_delta = timestamp.checked_sub(self.base_timestamp).ok_or_else(|| {
            Error::InvalidTimestamp(format!(
                "timestamp {timestamp} is too far from the batch's first timestamp {}",
                self.base_timestamp
            ))
        })?;
        let count = self
            .count
            .checked_add(1)
            .ok_or_else(|| Error::InvalidRecord("a batch holds at most 2^31-1 records".into()))?;
        let section = if self.compression == Compression::None {
            &mut self.out
        } else {
            &mut self.plain
        };
        write_record(section, timestamp_delta, self.count, key, value, headers)?;
        self.count = count;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        Ok(())
    }

    /// The finished batch at `base_offset`, stamped with `producer`, CRC filled. A batch
    /// without records is `Error::InvalidRecord`: Kafka has no producer batch without
    /// records.
    pub fn finish(mut self, base_offset: i64, producer: BatchProducer) -> Result<Vec<u8>> {
        if self.count == 0 {
            return Err(Error::InvalidRecord(
                "a batch needs at least one record".into(),
            ));
        }
        if self.compression != Compression::None {
            let compressed = compress(self.compression, &self.plain)?;
            self.out.extend_from_slice(&compressed);
        }
        let header = BatchHeader {
            base_offset,
            batch_length: to_i32(self.out.len() - LOG_OVERHEAD)?,
            partition_leader_epoch: -1,
            magic: MAGIC_V2,
            crc: 0,
            attributes: self.compression.attribute_bits(),
            last_offset_delta: self.count - 1,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            producer_id: producer.id,
            producer_epoch: producer.epoch,
            base_sequence: producer.base_sequence,
            records_count: self.count,
        };
        header.write_to(&mut self.out);
        write_crc(&mut self.out);
        Ok(self.out)
    }
}

/// The most bytes a record with these fields can take in a records section (its varints
/// at their longest): what a writer checks against batch.size before appending.
#[must_use]
pub fn record_size_max(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> usize {
    let field = |bytes: Option<&[u8]>| 5 + bytes.map_or(0, <[u8]>::len);
    let headers: usize = headers
        .iter()
        .map(|h| field(Some(h.key)) + field(h.value))
        .sum();
    // length, attributes, timestamp delta, offset delta, header count.
    5 + 1 + 10 + 5 + field(key) + field(value) + 5 + headers
}

/// Append one record (length prefix, then body) to a records section. Every length is
/// checked before a byte is written, so a failure leaves `section` as it was.
pub(super) fn write_record(
    section: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> Result<()> {
    let mut body_len = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    body_len += nullable_len(key)? + nullable_len(value)?;
    body_len += varint_len(to_i32(headers.len())?);
    for header in headers {
        body_len += nullable_len(Some(header.key))? + nullable_len(header.value)?;
    }
    write_varint(section, to_i32(body_len)?);
    section.push(0); // attributes
    write_varlong(section, timestamp_delta);
    write_varint(section, offset_delta);
    write_nullable(section, key);
    write_nullable(section, value);
    write_varint(section, headers.len() as i32);
    for header in headers {
        write_nullable(section, Some(header.key));
        write_nullable(section, header.value);
    }
    Ok(())
}

fn nullable_len(bytes: Option<&[u8]>) -> Result<usize> {
    Ok(match bytes {
        None => 1,
        Some(bytes) => varint_len(to_i32(bytes.len())?) + bytes.len(),
    })
}

/// Lengths were checked by `nullable_len` before anything was written.
fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, bytes.len() as i32);
            out.extend_from_slice(bytes);
        }
    }
}

/// Every size on the wire is an i32.
pub(super) fn to_i32(len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| Error::MessageTooLarge {
        size: len,
        limit: i32::MAX as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{decode_records, encode_producer_batch, validate_batch, RecordInput};
    use crate::records::{Header, Record};

    fn producer() -> BatchProducer {
        BatchProducer {
            id: 9,
            epoch: 1,
            base_sequence: 40,
        }
    }

    #[test]
    fn builds_the_bytes_encode_producer_batch_builds() {
        let inputs = [
            RecordInput {
                timestamp: 1_000,
                key: Some(b"k".to_vec()),
                value: Some(vec![7; 300]),
                headers: vec![Header {
                    key: b"h".to_vec(),
                    value: None,
                }],
            },
            RecordInput {
                timestamp: 900,
                key: None,
                value: None,
                headers: vec![],
            },
        ];
        for codec in Compression::ALL {
            let mut builder = BatchBuilder::new(codec, 0);
            for r in &inputs {
                let headers: Vec<HeaderRef<'_>> = r
                    .headers
                    .iter()
                    .map(|h| HeaderRef {
                        key: &h.key,
                        value: h.value.as_deref(),
                    })
                    .collect();
                builder
                    .append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers)
                    .unwrap();
            }
            assert_eq!(builder.records(), 2);
            let built = builder.finish(3, producer()).unwrap();
            let header = validate_batch(&built).unwrap();
            assert_eq!(
                (header.base_timestamp, header.max_timestamp),
                (1_000, 1_000)
            );
            assert_eq!(header.base_sequence, 40);
            let records = decode_records(&built).unwrap();
            assert_eq!(
                records[1],
                Record {
                    offset: 4,
                    timestamp: 900,
                    key: None,
                    value: None,
                    headers: vec![]
                }
            );
            if codec == Compression::None {
                // Deterministic bytes: the same as the RecordInput path.
                assert_eq!(
                    built,
                    encode_producer_batch(&inputs, codec, 3, producer()).unwrap()
                );
            }
        }
    }

    #[test]
    fn a_reused_buffer_builds_the_same_batch() {
        let build = |mut builder: BatchBuilder| {
            builder.append(5, Some(b"k"), Some(b"v"), &[]).unwrap();
            builder.finish(0, producer()).unwrap()
        };
        let fresh = build(BatchBuilder::new(Compression::Lz4, 0));
        let reused = build(BatchBuilder::reusing(Compression::Lz4, vec![0xAA; 4096]));
        assert_eq!(fresh, reused);
    }

    #[test]
    fn an_empty_batch_or_a_wild_timestamp_is_refused_and_leaves_the_batch_as_it_was() {
        let builder = BatchBuilder::new(Compression::None, 0);
        assert!(matches!(
            builder.finish(0, BatchProducer::NONE),
            Err(Error::InvalidRecord(_))
        ));
        let mut builder = BatchBuilder::new(Compression::None, 0);
        builder.append(i64::MIN, None, Some(b"v"), &[]).unwrap();
        let size = builder.size_bytes();
        assert!(matches!(
            builder.append(i64::MAX, None, Some(b"w"), &[]),
            Err(Error::InvalidTimestamp(_))
        ));
        assert_eq!((builder.records(), builder.size_bytes()), (1, size));
        let batch = builder.finish(0, BatchProducer::NONE).unwrap();
        assert_eq!(decode_records(&batch).unwrap().len(), 1);
    }
}
