use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::records::batch::{
    batch_bytes, write_crc, BatchHeader, TimestampType, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2,
    MIN_RECORD_LEN,
};
use crate::records::compression::{compress, decompress, MAX_DECOMPRESSED_LEN};
use crate::records::varint::{read_varint, read_varlong, write_varint, write_varlong};
use crate::records::Compression;

/// Smallest encoded header: key length and value length, one byte each.
const MIN_HEADER_LEN: usize = 2;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// One decoded record with absolute offset and timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<Header>,
}

/// A record to encode; offset delta is its index, timestamp absolute.
#[derive(Clone, Debug, Default)]
pub struct RecordInput {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<Header>,
}

/// One record borrowed from its batch's (uncompressed) records section: what readers that
/// copy fields straight into columns need, with no allocation per record but for headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// (key, value) of each header.
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
}

impl RecordRef<'_> {
    #[must_use]
    pub fn to_owned(&self) -> Record {
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self
                .headers
                .iter()
                .map(|(key, value)| Header {
                    key: key.to_vec(),
                    value: value.map(<[u8]>::to_vec),
                })
                .collect(),
        }
    }
}

/// Decode every record of the single (validated) batch at the start of `batch`,
/// decompressing as needed. Control batches decode like any other.
///
/// The CRC is not rechecked (that is `validate_batch`'s job), but every length is, so
/// unvalidated bytes produce an error, never a panic or an outsized allocation.
pub fn decode_records(batch: &[u8]) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    visit_records(batch, |record| {
        records.push(record.to_owned());
        Ok(())
    })?;
    Ok(records)
}

/// `decode_records` without copying: `visit` gets each record in order, borrowed from the
/// batch (or from its decompressed section, which lives until the call returns).
pub fn visit_records(
    batch: &[u8],
    mut visit: impl FnMut(RecordRef<'_>) -> Result<()>,
) -> Result<()> {
    let header = BatchHeader::parse(batch)?;
    let section = &batch_bytes(batch, &header)?[BATCH_HEADER_LEN..];
    let count = usize::try_from(header.records_count)
        .map_err(|_| Error::corrupt(format!("negative records count {}", header.records_count)))?;
    // Compaction can leave a batch with no records and no section to decompress.
    if count == 0 && section.is_empty() {
        return Ok(());
    }
    let data = records_data(&header, section)?;
    if count.saturating_mul(MIN_RECORD_LEN) > data.len() {
        return Err(Error::corrupt(format!(
            "{count} records cannot fit in {} bytes",
            data.len()
        )));
    }
    let context = BatchContext::new(&header);
    let mut reader = Reader::new(&data);
    for _ in 0..count {
        visit(decode_record(&mut reader, &context)?)?;
    }
    if !reader.is_empty() {
        return Err(Error::corrupt(format!(
            "{} bytes follow the batch's last record",
            reader.remaining()
        )));
    }
    Ok(())
}

/// The uncompressed records section, borrowed when the batch is not compressed.
pub(crate) fn records_data<'a>(header: &BatchHeader, section: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    match header.compression()? {
        Compression::None => Ok(Cow::Borrowed(section)),
        codec => Ok(Cow::Owned(decompress(
            codec,
            section,
            MAX_DECOMPRESSED_LEN,
        )?)),
    }
}

/// What turns a record's deltas into absolute values.
struct BatchContext {
    base_offset: i64,
    last_offset_delta: i32,
    base_timestamp: i64,
    /// Set for LogAppendTime batches, whose records all carry the batch's time.
    log_append_time: Option<i64>,
}

impl BatchContext {
    fn new(header: &BatchHeader) -> BatchContext {
        let log_append_time = (header.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(header.max_timestamp);
        BatchContext {
            base_offset: header.base_offset,
            last_offset_delta: header.last_offset_delta,
            base_timestamp: header.base_timestamp,
            log_append_time,
        }
    }

    /// Deltas outside [0, last_offset_delta] would put a record outside its own batch,
    /// which offset lookups rely on never happening.
    fn offset(&self, delta: i32) -> Result<i64> {
        if !(0..=self.last_offset_delta).contains(&delta) {
            return Err(Error::corrupt(format!(
                "record offset delta {delta} outside the batch's [0, {}]",
                self.last_offset_delta
            )));
        }
        self.base_offset
            .checked_add(i64::from(delta))
            .ok_or_else(|| Error::corrupt("record offset overflows"))
    }

    fn timestamp(&self, delta: i64) -> Result<i64> {
        if let Some(ts) = self.log_append_time {
            return Ok(ts);
        }
        self.base_timestamp
            .checked_add(delta)
            .ok_or_else(|| Error::corrupt("record timestamp overflows"))
    }
}

fn decode_record<'a>(reader: &mut Reader<'a>, context: &BatchContext) -> Result<RecordRef<'a>> {
    let len = reader.length("record")?;
    let mut body = Reader::new(reader.take(len)?);
    // Record attributes are unused in v2.
    body.take(1)?;
    let timestamp_delta = body.varlong()?;
    let offset_delta = body.varint()?;
    let key = body.nullable_bytes("key")?;
    let value = body.nullable_bytes("value")?;
    let headers = decode_headers(&mut body)?;
    if !body.is_empty() {
        return Err(Error::corrupt(format!(
            "record declares {len} bytes but its fields end {} bytes early",
            body.remaining()
        )));
    }
    Ok(RecordRef {
        offset: context.offset(offset_delta)?,
        timestamp: context.timestamp(timestamp_delta)?,
        key,
        value,
        headers,
    })
}

type HeaderRef<'a> = (&'a [u8], Option<&'a [u8]>);

fn decode_headers<'a>(body: &mut Reader<'a>) -> Result<Vec<HeaderRef<'a>>> {
    let count = body.count("header", MIN_HEADER_LEN)?;
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        let key_len = body.length("header key")?;
        let key = body.take(key_len)?;
        let value = body.nullable_bytes("header value")?;
        headers.push((key, value));
    }
    Ok(headers)
}

/// A bounds-checked cursor: every read is checked against what remains.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    fn varint(&mut self) -> Result<i32> {
        read_varint(self.buf, &mut self.pos)
    }

    fn varlong(&mut self) -> Result<i64> {
        read_varlong(self.buf, &mut self.pos)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.remaining() {
            return Err(Error::corrupt(format!(
                "{len} bytes wanted but only {} remain",
                self.remaining()
            )));
        }
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    /// A non-negative length that fits in what remains.
    fn length(&mut self, what: &str) -> Result<usize> {
        let len = self.varint()?;
        self.check_length(len, what)
    }

    fn check_length(&self, len: i32, what: &str) -> Result<usize> {
        let len = usize::try_from(len)
            .map_err(|_| Error::corrupt(format!("negative {what} length {len}")))?;
        if len > self.remaining() {
            return Err(Error::corrupt(format!(
                "{what} length {len} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(len)
    }

    /// A count of items at least `min_item_len` bytes each, so it can size an allocation.
    fn count(&mut self, what: &str, min_item_len: usize) -> Result<usize> {
        let count = self.varint()?;
        let count = usize::try_from(count)
            .map_err(|_| Error::corrupt(format!("negative {what} count {count}")))?;
        if count.saturating_mul(min_item_len) > self.remaining() {
            return Err(Error::corrupt(format!(
                "{count} {what}s cannot fit in {} bytes",
                self.remaining()
            )));
        }
        Ok(count)
    }

    /// Bytes behind a length where -1 means null; other negative lengths are corrupt.
    fn nullable_bytes(&mut self, what: &str) -> Result<Option<&'a [u8]>> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(None);
        }
        let len = self.check_length(len, what)?;
        Ok(Some(self.take(len)?))
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
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: count,
    };
    header.write_to(&mut out);
    write_crc(&mut out);
    Ok(out)
}

fn encode_records(out: &mut Vec<u8>, records: &[RecordInput], base_timestamp: i64) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_util::{
        largest_allocation_during, raw_batch, sample_records, RawBatch,
    };
    use crate::records::validate_batch;

    /// sarama's record_test.go record (real bytes from an independent encoder): one
    /// record, timestamp delta 5, key 1..4, value 5..7, one header.
    const SARAMA_RECORD: [u8; 21] = [
        40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
    ];
    /// sarama's FirstTimestamp bytes 0,0,1,88,141,205,89,56.
    const SARAMA_TIMESTAMP: i64 = 0x0158_8dcd_5938;

    fn sarama_expected() -> Record {
        Record {
            offset: 0,
            timestamp: SARAMA_TIMESTAMP + 5,
            key: Some(vec![1, 2, 3, 4]),
            value: Some(vec![5, 6, 7]),
            headers: vec![Header {
                key: vec![8, 9, 10],
                value: Some(vec![11, 12]),
            }],
        }
    }

    /// A sarama test batch: its header with the given CRC and attributes, then `section`.
    fn sarama_batch(crc: [u8; 4], attributes: u8, section: &[u8]) -> Vec<u8> {
        let mut batch = vec![0u8; BATCH_HEADER_LEN];
        let batch_length = (BATCH_HEADER_LEN - LOG_OVERHEAD + section.len()) as i32;
        batch[8..12].copy_from_slice(&batch_length.to_be_bytes());
        batch[16] = 2;
        batch[17..21].copy_from_slice(&crc);
        batch[22] = attributes;
        batch[27..35].copy_from_slice(&SARAMA_TIMESTAMP.to_be_bytes());
        batch[60] = 1;
        batch.extend_from_slice(section);
        batch
    }

    fn expected(inputs: &[RecordInput], base_offset: i64) -> Vec<Record> {
        inputs
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                offset: base_offset + i as i64,
                timestamp: r.timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r.headers.clone(),
            })
            .collect()
    }

    #[test]
    fn decodes_sarama_vectors_for_every_codec() {
        let gzip = [
            31, 139, 8, 0, 0, 9, 110, 136, 0, 255, 0, 21, 0, 234, 255, 40, 0, 10, 0, 8, 1, 2, 3, 4,
            6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12, 3, 0, 173, 201, 88, 103, 21, 0, 0, 0,
        ];
        let snappy = [
            21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12,
        ];
        let lz4 = [
            4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7,
            2, 6, 8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146,
        ];
        let cases: [([u8; 4], u8, &[u8]); 4] = [
            ([84, 121, 97, 253], 0, &SARAMA_RECORD),
            ([231, 74, 206, 165], 1, &gzip),
            ([21, 0, 159, 97], 2, &snappy),
            ([169, 74, 119, 197], 3, &lz4),
        ];
        for (crc, attributes, section) in cases {
            let batch = sarama_batch(crc, attributes, section);
            // Our CRC range and polynomial agree with sarama's.
            let header = BatchHeader::parse(&batch).unwrap();
            assert_eq!(
                crate::records::batch::compute_crc(&batch),
                header.crc,
                "codec {attributes}"
            );
            assert_eq!(
                decode_records(&batch).unwrap(),
                [sarama_expected()],
                "codec {attributes}"
            );
            // sarama's fixture leaves maxTimestamp at 0, below the base; Kafka accepts that.
            assert_eq!(validate_batch(&batch).unwrap().max_timestamp, 0);
        }
    }

    #[test]
    fn encodes_sarama_record_bytes() {
        let input = RecordInput {
            timestamp: SARAMA_TIMESTAMP + 5,
            key: Some(vec![1, 2, 3, 4]),
            value: Some(vec![5, 6, 7]),
            headers: vec![Header {
                key: vec![8, 9, 10],
                value: Some(vec![11, 12]),
            }],
        };
        let batch = encode_batch(&[input], Compression::None, 0).unwrap();
        // baseTimestamp is the first record's, so the delta is 0 where sarama's is 5.
        let mut record = SARAMA_RECORD;
        record[2] = 0;
        assert_eq!(&batch[BATCH_HEADER_LEN..], record);
    }

    #[test]
    fn roundtrip_every_codec() {
        let inputs = sample_records(50);
        for codec in Compression::ALL {
            let batch = encode_batch(&inputs, codec, 1000).unwrap();
            validate_batch(&batch).unwrap();
            assert_eq!(
                decode_records(&batch).unwrap(),
                expected(&inputs, 1000),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn roundtrip_nulls_empties_and_headers() {
        let inputs = vec![
            RecordInput {
                timestamp: 5,
                key: None,
                value: None,
                headers: vec![],
            },
            RecordInput {
                timestamp: 3,
                key: Some(vec![]),
                value: Some(vec![]),
                headers: vec![],
            },
            RecordInput {
                timestamp: 9,
                key: None,
                value: Some(vec![7; 300]),
                headers: vec![
                    Header {
                        key: b"null".to_vec(),
                        value: None,
                    },
                    Header {
                        key: vec![],
                        value: Some(vec![]),
                    },
                    Header {
                        key: b"k".to_vec(),
                        value: Some(vec![1; 200]),
                    },
                ],
            },
        ];
        for codec in Compression::ALL {
            let batch = encode_batch(&inputs, codec, 0).unwrap();
            let header = validate_batch(&batch).unwrap();
            assert_eq!((header.base_timestamp, header.max_timestamp), (5, 9));
            assert_eq!(
                decode_records(&batch).unwrap(),
                expected(&inputs, 0),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn large_batch_roundtrip() {
        let inputs: Vec<RecordInput> = (0..2000)
            .map(|i| RecordInput {
                timestamp: 1_700_000_000_000 + i,
                key: Some(format!("key-{i}").into_bytes()),
                value: Some(vec![(i % 256) as u8; 1000]),
                headers: vec![],
            })
            .collect();
        for codec in Compression::ALL {
            let batch = encode_batch(&inputs, codec, 0).unwrap();
            let records = decode_records(&batch).unwrap();
            assert_eq!(records.len(), 2000);
            assert_eq!(records[1999].offset, 1999);
            assert_eq!(
                records[1999].value.as_deref(),
                Some(&[(1999 % 256) as u8; 1000][..])
            );
        }
    }

    #[test]
    fn encode_rejects_empty_and_wild_timestamps() {
        assert!(matches!(
            encode_batch(&[], Compression::None, 0),
            Err(Error::InvalidRecord(_))
        ));
        let wild = [
            RecordInput {
                timestamp: i64::MIN,
                ..Default::default()
            },
            RecordInput {
                timestamp: i64::MAX,
                ..Default::default()
            },
        ];
        let err = encode_batch(&wild, Compression::None, 0).unwrap_err();
        assert!(matches!(err, Error::InvalidTimestamp(_)));
    }

    #[test]
    fn log_append_time_batches_report_max_timestamp() {
        let section = encoded_section(&sample_records(3), 100);
        let case = RawBatch {
            attributes: crate::records::batch::ATTR_LOG_APPEND_TIME,
            count: 3,
            last_offset_delta: 2,
            base_timestamp: 100,
            max_timestamp: 777,
            ..RawBatch::new(section)
        };
        let records = decode_records(&raw_batch(&case)).unwrap();
        assert!(records.iter().all(|r| r.timestamp == 777));
    }

    #[test]
    fn consistent_truncation_of_records_is_an_error() {
        // Cut the records section but fix up batchLength and CRC, so only record-level
        // bounds checks can notice.
        let inputs = sample_records(4);
        let section = encoded_section(&inputs, inputs[0].timestamp);
        for cut in 0..section.len() {
            let case = RawBatch {
                count: 4,
                last_offset_delta: 3,
                ..RawBatch::new(section[..cut].to_vec())
            };
            assert!(decode_records(&raw_batch(&case)).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn trailing_bytes_and_count_mismatch_are_errors() {
        let inputs = sample_records(3);
        let mut section = encoded_section(&inputs, inputs[0].timestamp);
        let case = RawBatch {
            count: 2,
            last_offset_delta: 2,
            ..RawBatch::new(section.clone())
        };
        assert!(decode_records(&raw_batch(&case)).is_err());
        section.push(0);
        let case = RawBatch {
            count: 3,
            last_offset_delta: 2,
            ..RawBatch::new(section)
        };
        assert!(decode_records(&raw_batch(&case)).is_err());
    }

    /// One record whose body is `fields` (after the attributes byte), wrapped in a batch.
    fn batch_with_record_body(fields: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8];
        body.extend_from_slice(fields);
        let mut section = Vec::new();
        write_varint(&mut section, body.len() as i32);
        section.extend_from_slice(&body);
        raw_batch(&RawBatch::new(section))
    }

    fn varint(value: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        out
    }

    #[test]
    fn well_formed_hand_record_decodes() {
        // ts delta 0, offset delta 0, key "k", null value, no headers.
        let mut fields = vec![0, 0];
        fields.extend(varint(1));
        fields.push(b'k');
        fields.extend(varint(-1));
        fields.extend(varint(0));
        let records = decode_records(&batch_with_record_body(&fields)).unwrap();
        assert_eq!(records[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(records[0].value, None);
    }

    #[test]
    fn hostile_lengths_error_without_allocating() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for key_len in [i32::MAX, 1 << 30, -2, i32::MIN] {
            let mut f = vec![0, 0];
            f.extend(varint(key_len));
            f.extend([0; 8]);
            cases.push(f);
        }
        // Value length too big, then a header count too big, a negative header count,
        // a null header key and a header value length too big.
        let tails: [&[i32]; 5] = [
            &[-1, i32::MAX],
            &[-1, -1, i32::MAX],
            &[-1, -1, -3],
            &[-1, -1, 1, -1, 0],
            &[-1, -1, 1, 0, 1 << 28],
        ];
        for tail in tails {
            let mut f = vec![0, 0];
            for v in tail {
                f.extend(varint(*v));
            }
            f.extend([0; 4]);
            cases.push(f);
        }
        // A varint encoding 2^32 (zigzag of 2^31), which no i32 holds.
        cases.push(vec![0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0]);
        for fields in cases {
            let batch = batch_with_record_body(&fields);
            let (result, largest) = largest_allocation_during(|| decode_records(&batch));
            assert!(result.is_err(), "{fields:?}");
            assert!(largest < 64 << 10, "{fields:?} allocated {largest} bytes");
        }
    }

    #[test]
    fn hostile_counts_error_without_allocating() {
        let section = encoded_section(&sample_records(1), 0);
        let cases = [
            RawBatch {
                count: i32::MAX,
                last_offset_delta: i32::MAX - 1,
                ..RawBatch::new(section.clone())
            },
            RawBatch {
                count: -5,
                ..RawBatch::new(section.clone())
            },
        ];
        for case in cases {
            let batch = raw_batch(&case);
            let (result, largest) = largest_allocation_during(|| decode_records(&batch));
            assert!(result.is_err());
            assert!(largest < 64 << 10, "allocated {largest} bytes");
        }
        // The record length itself lies.
        let mut section = varint(i32::MAX);
        section.extend([0; 10]);
        let batch = raw_batch(&RawBatch::new(section));
        let (result, largest) = largest_allocation_during(|| decode_records(&batch));
        assert!(result.is_err());
        assert!(largest < 64 << 10);
    }

    #[test]
    fn hostile_compressed_count_errors() {
        let plain = encoded_section(&sample_records(2), 0);
        let packed = compress(Compression::Zstd, &plain).unwrap();
        let case = RawBatch {
            attributes: Compression::Zstd.attribute_bits(),
            count: i32::MAX,
            last_offset_delta: i32::MAX - 1,
            ..RawBatch::new(packed)
        };
        let batch = raw_batch(&case);
        let (result, largest) = largest_allocation_during(|| decode_records(&batch));
        assert!(result.is_err());
        assert!(largest < 1 << 20, "allocated {largest} bytes");
    }

    #[test]
    fn offset_delta_outside_batch_is_error() {
        let section = encoded_section(&sample_records(3), 0);
        // Three records claim offset deltas 0..=2 but the batch says it ends at delta 1.
        let case = RawBatch {
            count: 3,
            last_offset_delta: 1,
            ..RawBatch::new(section)
        };
        assert!(decode_records(&raw_batch(&case)).is_err());
    }

    fn encoded_section(inputs: &[RecordInput], base_timestamp: i64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_records(&mut out, inputs, base_timestamp).unwrap();
        out
    }
}
