//! Records inside a RecordBatch v2: the decoded and borrowed record types and the
//! bounds-checked decoding of a batch's records section (`encode.rs` builds batches).

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::records::batch::{
    batch_bytes, BatchHeader, TimestampType, BATCH_HEADER_LEN, MIN_RECORD_LEN,
};
use crate::records::compression::Compression;
use crate::records::compression::{decompress, MAX_DECOMPRESSED_LEN};
use crate::records::varint::{read_varint, read_varlong};

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

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
