use crate::error::{Error, Result};
use crate::records::compression::Compression;

/// Bytes before `batchLength` is counted: baseOffset (8) + batchLength (4).
pub const LOG_OVERHEAD: usize = 12;
/// Fixed RecordBatch v2 header size, from baseOffset through recordsCount.
pub const BATCH_HEADER_LEN: usize = 61;
/// The only batch format this crate reads or writes.
pub const MAGIC_V2: i8 = 2;

/// Attribute bit 3: timestamps are the broker's LogAppendTime, not the producer's.
pub const ATTR_LOG_APPEND_TIME: i16 = 0x08;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;
/// Attribute bit 6: baseTimestamp holds the compaction delete horizon (KIP-534).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;
/// Bits 7-15 are unassigned; a batch setting them was not written by a Kafka client.
const ATTR_RESERVED: i16 = !0x7f;

/// Smallest batchLength: the fixed header minus LOG_OVERHEAD.
const MIN_BATCH_LENGTH: i32 = (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32;
/// Smallest encoded record: length, attributes, timestampDelta, offsetDelta, keyLength,
/// valueLength and header count, one byte each.
pub(crate) const MIN_RECORD_LEN: usize = 7;

// Field positions within the header.
const BASE_OFFSET: usize = 0;
const BATCH_LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
const MAGIC: usize = 16;
const CRC: usize = 17;
/// The CRC covers everything from attributes to the end of the batch, so the broker can
/// rewrite baseOffset and partitionLeaderEpoch without recomputing it.
const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORDS_COUNT: usize = 57;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Bytes after the batchLength field.
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Parse the 61-byte header at the start of `buf` (no CRC check). Errors if `buf` is
    /// shorter than 61 bytes, magic != 2, or batch_length < 49 (header minus overhead).
    pub fn parse(buf: &[u8]) -> Result<BatchHeader> {
        let Some(h) = buf.first_chunk::<BATCH_HEADER_LEN>() else {
            return Err(Error::corrupt(format!(
                "{} bytes is shorter than the {BATCH_HEADER_LEN} byte batch header",
                buf.len()
            )));
        };
        let magic = h[MAGIC] as i8;
        if magic != MAGIC_V2 {
            return Err(Error::corrupt(format!("unsupported batch magic {magic}")));
        }
        let batch_length = i32::from_be_bytes(field(h, BATCH_LENGTH));
        if batch_length < MIN_BATCH_LENGTH {
            return Err(Error::corrupt(format!(
                "batch length {batch_length} is below the minimum {MIN_BATCH_LENGTH}"
            )));
        }
        Ok(BatchHeader {
            base_offset: i64::from_be_bytes(field(h, BASE_OFFSET)),
            batch_length,
            partition_leader_epoch: i32::from_be_bytes(field(h, PARTITION_LEADER_EPOCH)),
            magic,
            crc: u32::from_be_bytes(field(h, CRC)),
            attributes: i16::from_be_bytes(field(h, ATTRIBUTES)),
            last_offset_delta: i32::from_be_bytes(field(h, LAST_OFFSET_DELTA)),
            base_timestamp: i64::from_be_bytes(field(h, BASE_TIMESTAMP)),
            max_timestamp: i64::from_be_bytes(field(h, MAX_TIMESTAMP)),
            producer_id: i64::from_be_bytes(field(h, PRODUCER_ID)),
            producer_epoch: i16::from_be_bytes(field(h, PRODUCER_EPOCH)),
            base_sequence: i32::from_be_bytes(field(h, BASE_SEQUENCE)),
            records_count: i32::from_be_bytes(field(h, RECORDS_COUNT)),
        })
    }

    /// Whole batch size on disk / wire: LOG_OVERHEAD + batch_length.
    #[must_use]
    pub fn total_size(&self) -> usize {
        // Parsed headers have batch_length >= 49; clamp hand-built ones rather than wrap.
        LOG_OVERHEAD + usize::try_from(self.batch_length).unwrap_or(0)
    }

    /// Offset of the batch's last record. Wraps on overflow (validate_batch rejects such
    /// batches), so a caller comparing it with `base_offset` sees the nonsense.
    #[must_use]
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    pub fn compression(&self) -> Result<Compression> {
        Compression::from_attributes(self.attributes)
    }

    #[must_use]
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & ATTR_LOG_APPEND_TIME != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    #[must_use]
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    #[must_use]
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Whether `base_timestamp` is a compaction delete horizon rather than a record time.
    #[must_use]
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & ATTR_DELETE_HORIZON != 0
    }

    /// Write the 61 header bytes into `buf[..61]`, the `crc` field as given.
    pub(crate) fn write_to(&self, buf: &mut [u8]) {
        let h = &mut buf[..BATCH_HEADER_LEN];
        put(h, BASE_OFFSET, self.base_offset.to_be_bytes());
        put(h, BATCH_LENGTH, self.batch_length.to_be_bytes());
        put(
            h,
            PARTITION_LEADER_EPOCH,
            self.partition_leader_epoch.to_be_bytes(),
        );
        put(h, MAGIC, self.magic.to_be_bytes());
        put(h, CRC, self.crc.to_be_bytes());
        put(h, ATTRIBUTES, self.attributes.to_be_bytes());
        put(h, LAST_OFFSET_DELTA, self.last_offset_delta.to_be_bytes());
        put(h, BASE_TIMESTAMP, self.base_timestamp.to_be_bytes());
        put(h, MAX_TIMESTAMP, self.max_timestamp.to_be_bytes());
        put(h, PRODUCER_ID, self.producer_id.to_be_bytes());
        put(h, PRODUCER_EPOCH, self.producer_epoch.to_be_bytes());
        put(h, BASE_SEQUENCE, self.base_sequence.to_be_bytes());
        put(h, RECORDS_COUNT, self.records_count.to_be_bytes());
    }
}

fn field<const N: usize>(header: &[u8; BATCH_HEADER_LEN], at: usize) -> [u8; N] {
    header[at..at + N]
        .try_into()
        .expect("field lies within the header")
}

fn put<const N: usize>(buf: &mut [u8], at: usize, bytes: [u8; N]) {
    buf[at..at + N].copy_from_slice(&bytes);
}

/// CRC-32C of a whole batch's covered range (attributes to end).
/// CRC-32C (Castagnoli) as RecordBatch v2 uses it. crc-fast folds with VPCLMULQDQ where the
/// CPU has it (58 GiB/s here, twice the crc32 instruction's 29), dispatching at run time.
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

pub(crate) fn compute_crc(batch: &[u8]) -> u32 {
    crc32c(&batch[ATTRIBUTES..])
}

/// Recompute and store the CRC of the whole batch `batch`.
pub(crate) fn write_crc(batch: &mut [u8]) {
    let crc = compute_crc(batch);
    put(batch, CRC, crc.to_be_bytes());
}

/// The header of `batch` as a batch of its own with no records: same offsets, producer
/// and timestamps, uncompressed. What the cleaner leaves where every record went, so a
/// consumer positioned in the gap still reaches the batch's end (and producer state
/// survives), as Kafka's cleaner keeps a producer's last batch.
pub(crate) fn emptied_batch(batch: &[u8]) -> Vec<u8> {
    let mut out = batch[..BATCH_HEADER_LEN].to_vec();
    put(&mut out, BATCH_LENGTH, MIN_BATCH_LENGTH.to_be_bytes());
    let attributes = i16::from_be_bytes([out[ATTRIBUTES], out[ATTRIBUTES + 1]]) & !0x07;
    put(&mut out, ATTRIBUTES, attributes.to_be_bytes());
    put(&mut out, RECORDS_COUNT, 0i32.to_be_bytes());
    write_crc(&mut out);
    out
}

/// The batch bytes `header` describes, or an error if `buf` holds fewer.
pub(crate) fn batch_bytes<'a>(buf: &'a [u8], header: &BatchHeader) -> Result<&'a [u8]> {
    buf.get(..header.total_size()).ok_or_else(|| {
        Error::corrupt(format!(
            "batch of {} bytes overruns the {} bytes available",
            header.total_size(),
            buf.len()
        ))
    })
}

/// Where one batch sits in a buffer of concatenated batches.
#[derive(Clone, Debug)]
pub struct BatchInfo {
    pub position: usize,
    pub header: BatchHeader,
}

/// Fully validate the single batch at the start of `buf`: header, size fits in `buf`,
/// CRC32C over attributes..end, attributes (compression known, no reserved bits),
/// records_count >= 0 and consistent with last_offset_delta. Timestamps are not compared:
/// Kafka accepts a maxTimestamp below baseTimestamp and some clients send one. Returns the header; the batch spans `header.total_size()` bytes.
///
/// Only header arithmetic and one CRC pass: records are not decoded, so this runs at
/// memory bandwidth. Records count may fall short of `last_offset_delta + 1`, as it does
/// in compacted batches; producer input gets the stricter `validate_batches`.
pub fn validate_batch(buf: &[u8]) -> Result<BatchHeader> {
    let header = BatchHeader::parse(buf)?;
    // CRC before the field checks: a flipped bit anywhere is reported as corruption.
    check_crc(batch_bytes(buf, &header)?, &header)?;
    check_fields(&header)?;
    Ok(header)
}

fn check_fields(header: &BatchHeader) -> Result<()> {
    check_attributes(header)?;
    check_offsets(header)?;
    check_min_records_size(header)
}

fn check_crc(batch: &[u8], header: &BatchHeader) -> Result<()> {
    let actual = compute_crc(batch);
    if actual != header.crc {
        return Err(Error::corrupt(format!(
            "batch CRC is {actual:#010x}, header says {:#010x}",
            header.crc
        )));
    }
    Ok(())
}

fn check_attributes(header: &BatchHeader) -> Result<()> {
    if header.attributes & ATTR_RESERVED != 0 {
        return Err(Error::corrupt(format!(
            "batch attributes {:#06x} set reserved bits",
            header.attributes
        )));
    }
    header.compression().map(|_| ())
}

fn check_offsets(header: &BatchHeader) -> Result<()> {
    let (count, delta) = (header.records_count, header.last_offset_delta);
    if delta < 0 {
        return Err(Error::corrupt(format!(
            "negative last offset delta {delta}"
        )));
    }
    if count < 0 || i64::from(count) > i64::from(delta) + 1 {
        return Err(Error::corrupt(format!(
            "records count {count} does not fit last offset delta {delta}"
        )));
    }
    // The offset after the batch must exist, or log bookkeeping overflows.
    let next = header.base_offset.checked_add(i64::from(delta) + 1);
    if next.is_none() {
        return Err(Error::corrupt(format!(
            "base offset {} overflows with last offset delta {delta}",
            header.base_offset
        )));
    }
    Ok(())
}

/// Uncompressed records take at least MIN_RECORD_LEN bytes each: a cheap bound that stops
/// a lying count before any decoder trusts it.
fn check_min_records_size(header: &BatchHeader) -> Result<()> {
    if header.compression()? != Compression::None {
        return Ok(());
    }
    let available = header.total_size() - BATCH_HEADER_LEN;
    let count = usize::try_from(header.records_count).unwrap_or(usize::MAX);
    let needed = count.saturating_mul(MIN_RECORD_LEN);
    if needed > available {
        return Err(Error::corrupt(format!(
            "{} records cannot fit in {available} bytes",
            header.records_count
        )));
    }
    Ok(())
}

/// Validate a producer's records field: one or more concatenated batches that exactly fill
/// `buf`, each no larger than `max_batch_bytes` (else `Error::MessageTooLarge`).
///
/// Beyond `validate_batch`, a producer batch must hold at least one record and exactly
/// `last_offset_delta + 1` of them (Kafka's rule: no offset gaps before compaction).
pub fn validate_batches(buf: &[u8], max_batch_bytes: usize) -> Result<Vec<BatchInfo>> {
    let infos = validate_batches_deferring_crc(buf, max_batch_bytes)?;
    check_batch_crcs(buf, &infos)?;
    Ok(infos)
}

/// `validate_batches` without the CRC pass, which the caller must still run with
/// `check_batch_crcs` before the batches count as appended (the log runs it while their
/// write is in flight). A batch that fails a field check has its CRC checked first, so a
/// flipped bit is still reported as corruption, as `validate_batch` reports it.
pub fn validate_batches_deferring_crc(
    buf: &[u8],
    max_batch_bytes: usize,
) -> Result<Vec<BatchInfo>> {
    if buf.is_empty() {
        return Err(Error::corrupt("no record batches"));
    }
    let mut infos = Vec::new();
    let mut position = 0;
    while position < buf.len() {
        let rest = &buf[position..];
        let header =
            validate_producer_batch(rest, max_batch_bytes).map_err(
                |e| match BatchHeader::parse(rest)
                    .and_then(|h| batch_bytes(rest, &h).and_then(|b| check_crc(b, &h)))
                {
                    Err(crc) if !matches!(e, Error::MessageTooLarge { .. }) => crc,
                    _ => e,
                },
            )?;
        let size = header.total_size();
        infos.push(BatchInfo { position, header });
        position += size;
    }
    Ok(infos)
}

/// The CRC pass over batches that `validate_batches_deferring_crc` accepted.
pub fn check_batch_crcs(buf: &[u8], infos: &[BatchInfo]) -> Result<()> {
    for info in infos {
        let batch = &buf[info.position..info.position + info.header.total_size()];
        check_crc(batch, &info.header)?;
    }
    Ok(())
}

fn validate_producer_batch(buf: &[u8], max_batch_bytes: usize) -> Result<BatchHeader> {
    // Size first: refuse an oversized batch without spending a CRC pass on it.
    let header = BatchHeader::parse(buf)?;
    let size = header.total_size();
    if size > max_batch_bytes {
        return Err(Error::MessageTooLarge {
            size,
            limit: max_batch_bytes,
        });
    }
    batch_bytes(buf, &header)?;
    check_fields(&header)?;
    if header.records_count < 1 {
        return Err(Error::InvalidRecord("batch has no records".into()));
    }
    if i64::from(header.records_count) != i64::from(header.last_offset_delta) + 1 {
        return Err(Error::InvalidRecord(format!(
            "records count {} disagrees with last offset delta {}",
            header.records_count, header.last_offset_delta
        )));
    }
    Ok(header)
}

/// Assign offsets in place: batch i gets baseOffset = next offset, advancing by
/// last_offset_delta + 1. With `log_append_time = Some(ts)`, set the timestamp-type bit and
/// maxTimestamp (and baseTimestamp, like Kafka) to `ts` and recompute the CRC. Returns the
/// offset after the last batch.
///
/// `batches` must come from `validate_batches` on this same `buf`; anything else may panic.
pub fn assign_offsets(
    buf: &mut [u8],
    batches: &[BatchInfo],
    first_offset: i64,
    log_append_time: Option<i64>,
) -> i64 {
    let mut next = first_offset;
    for info in batches {
        let batch = &mut buf[info.position..info.position + info.header.total_size()];
        // baseOffset lies outside the CRC's range: no recompute for it.
        put(batch, BASE_OFFSET, next.to_be_bytes());
        if let Some(ts) = log_append_time {
            stamp_log_append_time(batch, info.header.attributes, ts);
        }
        next += i64::from(info.header.last_offset_delta) + 1;
    }
    next
}

fn stamp_log_append_time(batch: &mut [u8], attributes: i16, ts: i64) {
    put(
        batch,
        ATTRIBUTES,
        (attributes | ATTR_LOG_APPEND_TIME).to_be_bytes(),
    );
    put(batch, BASE_TIMESTAMP, ts.to_be_bytes());
    put(batch, MAX_TIMESTAMP, ts.to_be_bytes());
    write_crc(batch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_util::{raw_batch, sample_records, RawBatch};
    use crate::records::{decode_records, encode_batch};

    /// Kafka's real bytes as sarama's record_test.go carries them: an empty batch and a
    /// control batch, CRCs computed by an independent implementation.
    const SARAMA_EMPTY: [u8; 61] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0, 0, 0, 0, 2, 89, 95, 183, 221, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0,
    ];
    const SARAMA_CONTROL_CRC: [u8; 4] = [81, 46, 67, 217];

    fn encoded(compression: Compression) -> Vec<u8> {
        encode_batch(&sample_records(5), compression, 0).unwrap()
    }

    #[test]
    fn parse_reads_every_field() {
        let header = BatchHeader {
            base_offset: 0x0102_0304_0506_0708,
            batch_length: 49,
            partition_leader_epoch: 7,
            magic: 2,
            crc: 0xdead_beef,
            attributes: ATTR_TRANSACTIONAL | ATTR_CONTROL | 3,
            last_offset_delta: 4,
            base_timestamp: -1,
            max_timestamp: 1_700_000_000_000,
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: 9,
            records_count: 5,
        };
        let mut buf = [0u8; BATCH_HEADER_LEN];
        header.write_to(&mut buf);
        let parsed = BatchHeader::parse(&buf).unwrap();
        assert_eq!(parsed, header);
        assert_eq!(parsed.total_size(), 61);
        assert_eq!(parsed.last_offset(), header.base_offset + 4);
        assert_eq!(parsed.compression().unwrap(), Compression::Lz4);
        assert!(parsed.is_transactional() && parsed.is_control());
        assert_eq!(parsed.timestamp_type(), TimestampType::CreateTime);
    }

    #[test]
    fn parse_rejects_short_bad_magic_and_small_length() {
        assert!(BatchHeader::parse(&SARAMA_EMPTY[..60]).is_err());
        let mut bad = SARAMA_EMPTY;
        bad[MAGIC] = 1;
        assert!(BatchHeader::parse(&bad).is_err());
        let mut bad = SARAMA_EMPTY;
        bad[BATCH_LENGTH + 3] = 48;
        assert!(BatchHeader::parse(&bad).is_err());
    }

    #[test]
    fn sarama_vectors_validate() {
        let header = validate_batch(&SARAMA_EMPTY).unwrap();
        assert_eq!(header.records_count, 0);
        assert!(decode_records(&SARAMA_EMPTY).unwrap().is_empty());
        let mut control = SARAMA_EMPTY;
        control[CRC..CRC + 4].copy_from_slice(&SARAMA_CONTROL_CRC);
        control[ATTRIBUTES + 1] = 0x20;
        assert!(validate_batch(&control).unwrap().is_control());
        // No records: a producer may not send it.
        assert!(matches!(
            validate_batches(&SARAMA_EMPTY, 1 << 20),
            Err(Error::InvalidRecord(_))
        ));
    }

    #[test]
    fn encoded_batches_validate_for_every_codec() {
        for codec in Compression::ALL {
            let batch = encoded(codec);
            let header = validate_batch(&batch).unwrap();
            assert_eq!(header.total_size(), batch.len());
            assert_eq!(header.compression().unwrap(), codec);
            assert_eq!(header.records_count, 5);
            assert_eq!(header.last_offset_delta, 4);
            assert_eq!(header.producer_id, -1);
            assert_eq!(header.timestamp_type(), TimestampType::CreateTime);
            let infos = validate_batches(&batch, batch.len()).unwrap();
            assert_eq!(infos.len(), 1);
        }
    }

    #[test]
    fn validate_ignores_trailing_bytes() {
        let mut buf = encoded(Compression::None);
        let len = buf.len();
        buf.extend_from_slice(&[0xff; 10]);
        assert_eq!(validate_batch(&buf).unwrap().total_size(), len);
    }

    #[test]
    fn crc_corruption_detected_at_every_covered_byte() {
        for codec in [Compression::None, Compression::Zstd] {
            let batch = encoded(codec);
            for i in ATTRIBUTES..batch.len() {
                let mut bad = batch.clone();
                bad[i] ^= 0x01;
                let err = validate_batch(&bad).unwrap_err();
                assert!(
                    matches!(err, Error::CorruptRecord(_)),
                    "{codec:?} byte {i}: {err}"
                );
            }
            let mut bad = batch.clone();
            bad[CRC] ^= 0x80;
            assert!(validate_batch(&bad).is_err());
        }
    }

    #[test]
    fn uncovered_fields_do_not_affect_crc() {
        let mut batch = encoded(Compression::None);
        put(&mut batch, BASE_OFFSET, 12345i64.to_be_bytes());
        put(&mut batch, PARTITION_LEADER_EPOCH, 9i32.to_be_bytes());
        assert_eq!(validate_batch(&batch).unwrap().base_offset, 12345);
    }

    #[test]
    fn truncation_at_every_cut_is_an_error() {
        for codec in Compression::ALL {
            let batch = encoded(codec);
            for cut in 0..batch.len() {
                assert!(
                    validate_batch(&batch[..cut]).is_err(),
                    "{codec:?} cut {cut}"
                );
                assert!(validate_batches(&batch[..cut], 1 << 20).is_err());
                assert!(
                    decode_records(&batch[..cut]).is_err(),
                    "{codec:?} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn header_rules() {
        let ok = RawBatch {
            count: 1,
            last_offset_delta: 0,
            ..RawBatch::new(vec![0; 7])
        };
        assert!(validate_batch(&raw_batch(&ok)).is_ok());
        let cases = [
            RawBatch {
                attributes: 0x80,
                ..ok.clone()
            },
            RawBatch {
                attributes: 0x100,
                ..ok.clone()
            },
            RawBatch {
                count: -1,
                ..ok.clone()
            },
            RawBatch {
                last_offset_delta: -1,
                count: 0,
                ..ok.clone()
            },
            RawBatch {
                count: 2,
                ..ok.clone()
            },
            RawBatch {
                base_offset: i64::MAX,
                ..ok.clone()
            },
            // Two records cannot fit in 7 bytes.
            RawBatch {
                count: 2,
                last_offset_delta: 1,
                ..ok.clone()
            },
        ];
        for case in cases {
            let err = validate_batch(&raw_batch(&case)).unwrap_err();
            assert!(matches!(err, Error::CorruptRecord(_)), "{case:?}: {err}");
        }
        for bits in 5..=7 {
            let case = RawBatch {
                attributes: bits,
                ..ok.clone()
            };
            let err = validate_batch(&raw_batch(&case)).unwrap_err();
            assert!(matches!(err, Error::UnsupportedCompression(b) if b == bits));
        }
    }

    #[test]
    fn max_timestamp_below_base_is_accepted_like_kafka() {
        let backwards = RawBatch {
            count: 1,
            last_offset_delta: 0,
            base_timestamp: 10,
            max_timestamp: 9,
            ..RawBatch::new(vec![0; 7])
        };
        for attributes in [0, ATTR_LOG_APPEND_TIME, ATTR_DELETE_HORIZON] {
            let case = RawBatch {
                attributes,
                ..backwards.clone()
            };
            assert!(validate_batch(&raw_batch(&case)).is_ok(), "{attributes:#x}");
        }
    }

    #[test]
    fn compacted_offset_gaps_validate_but_not_from_producers() {
        // Three records left of ten after compaction.
        let gappy = RawBatch {
            count: 3,
            last_offset_delta: 9,
            ..RawBatch::new(vec![0; 21])
        };
        let buf = raw_batch(&gappy);
        assert!(validate_batch(&buf).is_ok());
        assert!(matches!(
            validate_batches(&buf, 1 << 20),
            Err(Error::InvalidRecord(_))
        ));
    }

    #[test]
    fn validate_batches_splits_and_limits() {
        let a = encoded(Compression::None);
        let b = encoded(Compression::Gzip);
        let mut buf = a.clone();
        buf.extend_from_slice(&b);
        let infos = validate_batches(&buf, 1 << 20).unwrap();
        assert_eq!(infos.len(), 2);
        assert_eq!(infos[0].position, 0);
        assert_eq!(infos[1].position, a.len());
        assert_eq!(infos[1].header.compression().unwrap(), Compression::Gzip);

        let limit = a.len().max(b.len()) - 1;
        let err = validate_batches(&buf, limit).unwrap_err();
        assert!(matches!(err, Error::MessageTooLarge { limit: l, .. } if l == limit));
        assert!(validate_batches(&[], 1 << 20).is_err());
        // A trailing fragment is not a batch.
        buf.extend_from_slice(&a[..30]);
        assert!(validate_batches(&buf, 1 << 20).is_err());
    }

    #[test]
    fn assign_offsets_rewrites_base_offsets_only() {
        let mut buf = encoded(Compression::None);
        buf.extend_from_slice(&encoded(Compression::Snappy));
        let original = buf.clone();
        let infos = validate_batches(&buf, 1 << 20).unwrap();
        let next = assign_offsets(&mut buf, &infos, 100, None);
        assert_eq!(next, 110);
        let second = infos[1].position;
        assert_eq!(validate_batch(&buf).unwrap().base_offset, 100);
        assert_eq!(validate_batch(&buf[second..]).unwrap().base_offset, 105);
        // Only the 8 baseOffset bytes of each batch changed.
        for (i, (x, y)) in buf.iter().zip(&original).enumerate() {
            let in_offset = i < 8 || (second..second + 8).contains(&i);
            assert!(in_offset || x == y, "byte {i} changed");
        }
        let offsets: Vec<i64> = decode_records(&buf[second..])
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, [105, 106, 107, 108, 109]);
    }

    #[test]
    fn assign_offsets_with_log_append_time() {
        let mut buf = encoded(Compression::Lz4);
        let infos = validate_batches(&buf, 1 << 20).unwrap();
        let ts = 1_234_567_890_123;
        assert_eq!(assign_offsets(&mut buf, &infos, 7, Some(ts)), 12);
        let header = validate_batch(&buf).unwrap();
        assert_eq!(header.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!((header.base_timestamp, header.max_timestamp), (ts, ts));
        assert_eq!(header.compression().unwrap(), Compression::Lz4);
        for (i, record) in decode_records(&buf).unwrap().iter().enumerate() {
            assert_eq!(record.offset, 7 + i as i64);
            assert_eq!(record.timestamp, ts);
        }
    }
}
