//! Record-by-record validation of a producer's batches, as Kafka's `LogValidator` walks every
//! record on produce: a batch whose CRC and header agree can still hold garbage records
//! (zeroed, 0xff, a codec flag on data that is not in that codec), and storing it would
//! stall every consumer at that offset.
//!
//! One pass per batch, reading only what locates the fields: lengths, varints, deltas. Key,
//! value and header bytes are stepped over, never copied. Compressed batches are inflated
//! as a stream through a fixed 64 KiB window, counting against `max_decompressed_bytes`,
//! so a compression bomb costs at most that much inflating and nothing in memory.
//!
//! Errors follow Kafka: records that do not parse are `InvalidRecord` (Kafka's
//! `InvalidRecordException` from `DefaultRecord.readFrom` and the batch iterator:
//! INVALID_RECORD), and so is a batch inflating past the cap (Kafka, with no cap, answers
//! INVALID_RECORD for the classic bomb of zeros once it has inflated it). Data that is not
//! valid in its codec is `CorruptRecord` (CORRUPT_MESSAGE): Kafka lets that codec exception
//! escape as UNKNOWN_SERVER_ERROR, which tells a client nothing.

use std::io::Read;

use crate::error::{Error, Result};
use crate::records::batch::{check_batch_crcs, BatchHeader, BatchInfo, BATCH_HEADER_LEN};
use crate::records::compression::decoder;
use crate::records::compression::Compression;
use crate::records::varint::{read_varint, read_varlong};
use crate::records::xerial::OverLimit;

/// Default ceiling on a batch's inflated records: the largest legitimate batch (Kafka's
/// `message.max.bytes` default of 1 MiB, compressed 100x and more by zstd or gzip on
/// repetitive values) stays far below it, while a bomb costs at most this much inflating.
/// An absolute bound rather than a ratio: ratios of 1000x are real for repetitive data.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 256 << 20;

/// Inflated bytes held at a time while walking a compressed batch.
const WINDOW_BYTES: usize = 64 << 10;
/// A varlong takes at most 10 bytes.
const MAX_VARINT_BYTES: usize = 10;

/// What a topic asks of every record beyond being well-formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRules {
    /// Compacted topics refuse records without a key.
    pub require_keys: bool,
    /// Ceiling on a compressed batch's records once inflated.
    pub max_decompressed_bytes: usize,
    /// The CreateTime range records must fall in (Kafka's LogValidator: now minus
    /// `message.timestamp.before.max.ms` to now plus `message.timestamp.after.max.ms`);
    /// unbounded for LogAppendTime topics, whose timestamps the broker sets.
    pub timestamp_min: i64,
    pub timestamp_max: i64,
}

impl Default for RecordRules {
    fn default() -> Self {
        RecordRules {
            require_keys: false,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
            timestamp_min: i64::MIN,
            timestamp_max: i64::MAX,
        }
    }
}

/// The CRCs, then the records, of the batches `validate_batches_deferring_crc` accepted in
/// `buf`. Records are read only once their CRC holds, so a flipped bit stays CORRUPT_MESSAGE.
/// Keyless records on a compacted topic come back together as `KeylessRecords`.
pub fn check_batches(buf: &[u8], infos: &[BatchInfo], rules: &RecordRules) -> Result<()> {
    check_batch_crcs(buf, infos)?;
    check_records_of(buf, infos, rules)
}

/// `check_batches` without the CRCs (already checked by `validate_batches`).
pub fn check_records_of(buf: &[u8], infos: &[BatchInfo], rules: &RecordRules) -> Result<()> {
    let mut found = Findings::default();
    for info in infos {
        let batch = &buf[info.position..info.position + info.header.total_size()];
        walk_batch(batch, &info.header, rules, &mut found)?;
    }
    found.into_result()
}

/// Records that are well-formed but break a topic rule, gathered over a whole append so
/// the client hears about every one (Kafka's `record_errors`).
#[derive(Default)]
struct Findings {
    keyless: Vec<i32>,
    timestamps: Vec<(i32, String)>,
}

impl Findings {
    /// Kafka reports timestamp errors first (INVALID_TIMESTAMP), then keyless records.
    fn into_result(self) -> Result<()> {
        if !self.timestamps.is_empty() {
            Err(Error::TimestampsOutOfRange {
                records: self.timestamps,
            })
        } else if !self.keyless.is_empty() {
            Err(Error::KeylessRecords {
                records: self.keyless,
            })
        } else {
            Ok(())
        }
    }
}

/// Walk every record of the one batch `batch`, whose header (`header`) was validated.
pub fn validate_records(batch: &[u8], header: &BatchHeader, rules: &RecordRules) -> Result<()> {
    let mut found = Findings::default();
    walk_batch(batch, header, rules, &mut found)?;
    found.into_result()
}

fn walk_batch(
    batch: &[u8],
    header: &BatchHeader,
    rules: &RecordRules,
    found: &mut Findings,
) -> Result<()> {
    let section = batch
        .get(BATCH_HEADER_LEN..header.total_size())
        .ok_or_else(|| Error::corrupt("batch shorter than its header says"))?;
    let walk = Walk {
        count: header.records_count.max(0),
        base_timestamp: header.base_timestamp,
        require_keys: rules.require_keys && !header.is_control(),
        // Control batches carry the broker's or coordinator's time.
        timestamps: (!header.is_control()).then_some((rules.timestamp_min, rules.timestamp_max)),
    };
    match header.compression()? {
        Compression::None => walk.run(
            &mut Slice {
                buf: section,
                pos: 0,
            },
            found,
        ),
        codec => {
            let max = rules.max_decompressed_bytes;
            let reader = decoder(codec, section, max)?;
            walk.run(&mut Stream::new(reader, codec, max), found)
        }
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidRecord(message.into())
}

fn premature_eof() -> Error {
    invalid("Incorrect declared batch size, premature EOF reached")
}

/// Where record bytes come from: the batch itself, or an inflating stream.
trait Source {
    /// Bytes consumed so far.
    fn position(&self) -> u64;
    fn byte(&mut self) -> Result<u8>;
    fn varint(&mut self) -> Result<i32>;
    fn varlong(&mut self) -> Result<i64>;
    fn skip(&mut self, len: u64) -> Result<()>;
    fn at_end(&mut self) -> Result<bool>;
}

struct Slice<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Source for Slice<'_> {
    #[inline]
    fn position(&self) -> u64 {
        self.pos as u64
    }

    #[inline]
    fn byte(&mut self) -> Result<u8> {
        let byte = *self.buf.get(self.pos).ok_or_else(premature_eof)?;
        self.pos += 1;
        Ok(byte)
    }

    #[inline]
    fn varint(&mut self) -> Result<i32> {
        if let Some(value) = one_byte(self.buf, &mut self.pos) {
            return Ok(value as i32);
        }
        read_varint(self.buf, &mut self.pos).map_err(bad_varint)
    }

    #[inline]
    fn varlong(&mut self) -> Result<i64> {
        if let Some(value) = one_byte(self.buf, &mut self.pos) {
            return Ok(value);
        }
        read_varlong(self.buf, &mut self.pos).map_err(bad_varint)
    }

    #[inline]
    fn skip(&mut self, len: u64) -> Result<()> {
        let left = (self.buf.len() - self.pos) as u64;
        if len > left {
            return Err(premature_eof());
        }
        self.pos += len as usize;
        Ok(())
    }

    fn at_end(&mut self) -> Result<bool> {
        Ok(self.pos == self.buf.len())
    }
}

/// Varints in a record (lengths, deltas, counts) mostly fit in one or two bytes: decoded
/// inline, they keep the walk of small records cheap. `None` for the rest, which the
/// strict general decoder reads.
#[inline]
fn one_byte(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let first = *buf.get(*pos)?;
    let raw = if first < 0x80 {
        *pos += 1;
        u64::from(first)
    } else {
        let second = *buf.get(*pos + 1)?;
        if second >= 0x80 {
            return None;
        }
        *pos += 2;
        u64::from(first & 0x7f) | u64::from(second) << 7
    };
    Some((raw >> 1) as i64 ^ -((raw & 1) as i64))
}

fn bad_varint(e: Error) -> Error {
    match e {
        Error::CorruptRecord(m) => invalid(m),
        e => e,
    }
}

/// Inflated bytes through a fixed window; `produced` counts everything the decoder gave.
struct Stream<'a> {
    reader: Box<dyn Read + 'a>,
    codec: Compression,
    max: u64,
    window: Vec<u8>,
    start: usize,
    end: usize,
    /// Stream position of `window[0]`.
    base: u64,
    produced: u64,
}

impl<'a> Stream<'a> {
    fn new(reader: Box<dyn Read + 'a>, codec: Compression, max: usize) -> Stream<'a> {
        Stream {
            reader,
            codec,
            max: max as u64,
            window: vec![0; WINDOW_BYTES],
            start: 0,
            end: 0,
            base: 0,
            produced: 0,
        }
    }

    /// Make at least `want` bytes available unless the stream ends first.
    fn fill(&mut self, want: usize) -> Result<()> {
        if self.end - self.start >= want {
            return Ok(());
        }
        if self.start > 0 {
            self.window.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        while self.end < want {
            let n = match self.reader.read(&mut self.window[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(&e)),
            };
            if n == 0 {
                break;
            }
            self.end += n;
            self.produced += n as u64;
            if self.produced > self.max {
                return Err(self.over_cap());
            }
        }
        Ok(())
    }

    fn over_cap(&self) -> Error {
        invalid(format!(
            "{} records decompress to more than the {} byte limit \
             (kafkalite.batch.decompressed.max.bytes)",
            self.codec.name(),
            self.max
        ))
    }

    fn read_error(&self, e: &std::io::Error) -> Error {
        if e.get_ref().is_some_and(|inner| inner.is::<OverLimit>()) {
            return self.over_cap();
        }
        Error::corrupt(format!("invalid {} data: {e}", self.codec.name()))
    }

    fn available(&self) -> &[u8] {
        &self.window[self.start..self.end]
    }
}

impl Source for Stream<'_> {
    fn position(&self) -> u64 {
        self.base + self.start as u64
    }

    fn byte(&mut self) -> Result<u8> {
        self.fill(1)?;
        let byte = *self.available().first().ok_or_else(premature_eof)?;
        self.start += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<i32> {
        if self.end - self.start >= MAX_VARINT_BYTES {
            if let Some(value) = one_byte(&self.window[..self.end], &mut self.start) {
                return Ok(value as i32);
            }
        }
        self.fill(MAX_VARINT_BYTES)?;
        let mut pos = 0;
        let value = read_varint(self.available(), &mut pos).map_err(bad_varint)?;
        self.start += pos;
        Ok(value)
    }

    fn varlong(&mut self) -> Result<i64> {
        if self.end - self.start >= MAX_VARINT_BYTES {
            if let Some(value) = one_byte(&self.window[..self.end], &mut self.start) {
                return Ok(value);
            }
        }
        self.fill(MAX_VARINT_BYTES)?;
        let mut pos = 0;
        let value = read_varlong(self.available(), &mut pos).map_err(bad_varint)?;
        self.start += pos;
        Ok(value)
    }

    fn skip(&mut self, mut len: u64) -> Result<()> {
        while len > 0 {
            if self.start == self.end {
                self.fill(1)?;
                if self.start == self.end {
                    return Err(premature_eof());
                }
            }
            let step = len.min((self.end - self.start) as u64);
            self.start += step as usize;
            len -= step;
        }
        Ok(())
    }

    fn at_end(&mut self) -> Result<bool> {
        self.fill(1)?;
        Ok(self.start == self.end)
    }
}

/// What each record is checked against.
struct Walk {
    count: i32,
    base_timestamp: i64,
    require_keys: bool,
    /// (min, max) a record's timestamp must lie in; `None` checks nothing.
    timestamps: Option<(i64, i64)>,
}

impl Walk {
    fn run(&self, src: &mut impl Source, found: &mut Findings) -> Result<()> {
        for index in 0..self.count {
            self.record(src, index, found).map_err(|e| match e {
                Error::InvalidRecord(m) => invalid(format!("record {index}: {m}")),
                e => e,
            })?;
        }
        if !src.at_end()? {
            return Err(invalid(format!(
                "Incorrect declared batch size, records still remaining after the {} declared",
                self.count
            )));
        }
        Ok(())
    }

    /// One record: length, attributes, timestamp delta, offset delta, key, value, headers,
    /// and nothing else within its length.
    #[inline]
    fn record(&self, src: &mut impl Source, index: i32, found: &mut Findings) -> Result<()> {
        let len = src.varint()?;
        if len < 1 {
            return Err(invalid(format!("invalid record size {len}")));
        }
        let start = src.position();
        let end = start + len as u64;
        src.byte()?; // attributes: unused in v2
        let timestamp_delta = src.varlong()?;
        let Some(timestamp) = self.base_timestamp.checked_add(timestamp_delta) else {
            return Err(invalid(format!(
                "timestamp delta {timestamp_delta} overflows the base timestamp {}",
                self.base_timestamp
            )));
        };
        // -1 is "no timestamp" (Kafka's RecordBatch.NO_TIMESTAMP), never out of range.
        if let Some((min, max)) = self.timestamps.filter(|_| timestamp != -1) {
            if timestamp < min || timestamp > max {
                found.timestamps.push((
                    index,
                    format!(
                        "Timestamp {timestamp} of message with offset {index} is out of range. The timestamp should be within [{min}, {max}]"
                    ),
                ));
            }
        }
        let offset_delta = src.varint()?;
        if offset_delta != index {
            // Producers number records 0, 1, 2, ...: anything else would put a record at
            // another record's offset once stored.
            return Err(invalid(format!(
                "offset delta {offset_delta}, expected {index}"
            )));
        }
        let has_key = nullable(src, end, "key")?;
        if self.require_keys && !has_key {
            found.keyless.push(index);
        }
        nullable(src, end, "value")?;
        let headers = src.varint()?;
        if headers < 0 {
            return Err(invalid(format!(
                "Found invalid number of record headers {headers}"
            )));
        }
        for _ in 0..headers {
            // Every header takes at least two bytes: a count past the record's end lies.
            if src.position() >= end {
                return Err(invalid(format!(
                    "{headers} headers overrun the record's {len} bytes"
                )));
            }
            let key_len = src.varint()?;
            if key_len < 0 {
                return Err(invalid(format!(
                    "Invalid negative header key size {key_len}"
                )));
            }
            skip_within(src, key_len as u64, end, "header key")?;
            nullable(src, end, "header value")?;
        }
        let read = src.position() - start;
        if read != len as u64 {
            return Err(invalid(format!(
                "Invalid record size: expected to read {len} bytes in record payload, but instead read {read}"
            )));
        }
        Ok(())
    }
}

/// A length-prefixed field where -1 is null; false for null.
#[inline]
fn nullable(src: &mut impl Source, end: u64, what: &str) -> Result<bool> {
    let len = src.varint()?;
    if len == -1 {
        return Ok(false);
    }
    if len < -1 {
        return Err(invalid(format!("invalid {what} length {len}")));
    }
    skip_within(src, len as u64, end, what)?;
    Ok(true)
}

#[inline]
fn skip_within(src: &mut impl Source, len: u64, end: u64, what: &str) -> Result<()> {
    if src.position() + len > end {
        return Err(invalid(format!(
            "{what} of {len} bytes overruns the record"
        )));
    }
    src.skip(len)
}

#[cfg(test)]
#[path = "record_check_tests.rs"]
mod tests;
