//! Fetched record batches to Arrow column buffers, for the Spark source: the records of a
//! Fetch partition response become the buffers of Arrow arrays (offsets, timestamps, keys,
//! values, headers) that Python wraps with `pyarrow.Array.from_buffers` — no per-record
//! Python object is ever made. Decoding (CRC check, decompression, varints) reuses
//! kafkalite-core's record code and runs with the GIL released.

use kafkalite_core::records::{
    validate_batch, visit_records, BatchHeader, RecordRef, TimestampType, LOG_OVERHEAD,
};
use kafkalite_core::storage::txn_index::{control_type, CONTROL_ABORT};
use kafkalite_core::Error;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::buffer::borrow;
use crate::errors::CoreError;

/// A typical record's bytes on the wire, to size buffers from a fetch's length.
const ROW_BYTES_GUESS: usize = 64;

/// An Arrow validity bitmap (LSB first, set = valid) and its null count.
#[derive(Default)]
struct Validity {
    bits: Vec<u8>,
    len: usize,
    null_count: usize,
}

impl Validity {
    fn push(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.bits.push(0);
        }
        if valid {
            self.bits[self.len / 8] |= 1 << (self.len % 8);
        } else {
            self.null_count += 1;
        }
        self.len += 1;
    }

    /// The bitmap as Arrow wants it: absent when nothing is null.
    fn to_py<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        (self.null_count > 0).then(|| PyBytes::new(py, &self.bits))
    }
}

/// Arrow's variable-size binary layout: int32 offsets (n + 1), data, validity bitmap.
struct BinaryColumn {
    offsets: Vec<i32>,
    data: Vec<u8>,
    validity: Validity,
}

impl BinaryColumn {
    fn new() -> BinaryColumn {
        BinaryColumn {
            offsets: vec![0],
            data: Vec::new(),
            validity: Validity::default(),
        }
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Append one value; Arrow's int32 offsets cap a column at 2 GiB, so a fetch that
    /// decompresses to more is an error rather than a silent wrap.
    fn push(&mut self, value: Option<&[u8]>) -> Result<(), Error> {
        self.validity.push(value.is_some());
        if let Some(bytes) = value {
            self.data.extend_from_slice(bytes);
        }
        let end = i32::try_from(self.data.len()).map_err(|_| Error::MessageTooLarge {
            size: self.data.len(),
            limit: i32::MAX as usize,
        })?;
        self.offsets.push(end);
        Ok(())
    }
}

/// Every column of the records decoded so far.
struct Columns {
    offset: Vec<i64>,
    /// Microseconds since the epoch: Arrow's `timestamp[us]`, which Spark's TimestampType is.
    timestamp: Vec<i64>,
    timestamp_type: Vec<i32>,
    key: BinaryColumn,
    value: BinaryColumn,
    /// list<struct<key: string, value: binary>>: list offsets plus the struct's children.
    header_offsets: Vec<i32>,
    /// A record without headers has a null list, as in Spark's Kafka source.
    header_validity: Validity,
    header_key: BinaryColumn,
    header_value: BinaryColumn,
    include_headers: bool,
    /// The offset after the last complete batch seen, where the next fetch starts.
    next_offset: Option<i64>,
}

impl Columns {
    fn new(include_headers: bool) -> Columns {
        Columns {
            offset: Vec::new(),
            timestamp: Vec::new(),
            timestamp_type: Vec::new(),
            key: BinaryColumn::new(),
            value: BinaryColumn::new(),
            header_offsets: vec![0],
            header_validity: Validity::default(),
            header_key: BinaryColumn::new(),
            header_value: BinaryColumn::new(),
            include_headers,
            next_offset: None,
        }
    }

    fn push(&mut self, record: &RecordRef<'_>, timestamp_type: i32) -> Result<(), Error> {
        self.offset.push(record.offset);
        self.timestamp.push(record.timestamp.saturating_mul(1000));
        self.timestamp_type.push(timestamp_type);
        self.key.push(record.key)?;
        self.value.push(record.value)?;
        if self.include_headers {
            for (key, value) in &record.headers {
                // Arrow strings must be UTF-8; Kafka header keys are Java strings, so a
                // non-UTF-8 key only comes from a hand-made producer and is made lossy.
                let key = String::from_utf8_lossy(key);
                self.header_key.push(Some(key.as_bytes()))?;
                self.header_value.push(*value)?;
            }
            let count = i32::try_from(self.header_key.len())
                .map_err(|_| Error::corrupt("more than 2^31 headers in one fetch"))?;
            self.header_offsets.push(count);
            self.header_validity.push(!record.headers.is_empty());
        }
        Ok(())
    }

    /// Records decode to about the size of the fetch (more when compressed): sizing the
    /// buffers for that up front saves re-copying them as they grow record by record.
    fn reserve(&mut self, fetch_bytes: usize) {
        let rows = fetch_bytes / ROW_BYTES_GUESS;
        self.offset.reserve(rows);
        self.timestamp.reserve(rows);
        self.timestamp_type.reserve(rows);
        for column in [&mut self.key, &mut self.value] {
            column.offsets.reserve(rows);
            column.validity.bits.reserve(rows / 8);
        }
        self.value.data.reserve(fetch_bytes);
    }

    /// Decode the complete batches of `data`, keeping records in [start, end). A trailing
    /// partial batch (a fetch response may end with one) is left for the next fetch.
    /// `aborted`: (producer id, first offset) of the aborted transactions a read_committed
    /// Fetch named; their batches are skipped as Kafka's consumer skips them (a producer
    /// counts as aborting from its first offset until its ABORT marker).
    fn decode(
        &mut self,
        data: &[u8],
        start: i64,
        end: i64,
        aborted: &[(i64, i64)],
    ) -> Result<(), Error> {
        self.reserve(data.len());
        let mut pending: Vec<(i64, i64)> = aborted.to_vec();
        pending.sort_by_key(|&(_, first)| std::cmp::Reverse(first));
        let mut aborting: std::collections::HashSet<i64> = std::collections::HashSet::new();
        let mut rest = data;
        while rest.len() >= LOG_OVERHEAD {
            let length = i32::from_be_bytes(rest[8..12].try_into().expect("4 bytes"));
            let length = usize::try_from(length)
                .map_err(|_| Error::corrupt(format!("negative batch length {length}")))?;
            let total = LOG_OVERHEAD.saturating_add(length);
            if total > rest.len() {
                break;
            }
            let (batch, tail) = rest.split_at(total);
            rest = tail;
            let header = BatchHeader::parse(batch)?;
            if header.base_offset >= end {
                // Nothing from here on is wanted. Compaction can leave no batch between the
                // fetch position and this one: the range is still done, so say where the
                // log continues rather than "no complete batch".
                let next = self
                    .next_offset
                    .map_or(header.base_offset, |n| n.max(header.base_offset));
                self.next_offset = Some(next);
                break;
            }
            self.next_offset = Some(header.last_offset() + 1);
            if header.is_transactional() {
                while pending
                    .last()
                    .is_some_and(|&(_, first)| first <= header.last_offset())
                {
                    aborting.insert(pending.pop().expect("checked").0);
                }
                if header.is_control() {
                    if control_type(batch) == Some(CONTROL_ABORT) {
                        aborting.remove(&header.producer_id);
                    }
                } else if aborting.contains(&header.producer_id) {
                    continue;
                }
            }
            // Control batches (transaction markers) are not data; batches wholly before
            // `start` need no decoding at all.
            if header.is_control() || header.last_offset() < start {
                continue;
            }
            validate_batch(batch)?;
            let timestamp_type = match header.timestamp_type() {
                TimestampType::CreateTime => 0,
                TimestampType::LogAppendTime => 1,
            };
            visit_records(batch, |record| {
                if (start..end).contains(&record.offset) {
                    self.push(&record, timestamp_type)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

fn i64_bytes<'py>(py: Python<'py>, values: &[i64]) -> Bound<'py, PyBytes> {
    PyBytes::new_with(py, values.len() * 8, |out| {
        for (chunk, v) in out.chunks_exact_mut(8).zip(values) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    })
    .expect("filling bytes cannot fail")
}

fn i32_bytes<'py>(py: Python<'py>, values: &[i32]) -> Bound<'py, PyBytes> {
    PyBytes::new_with(py, values.len() * 4, |out| {
        for (chunk, v) in out.chunks_exact_mut(4).zip(values) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    })
    .expect("filling bytes cannot fail")
}

/// Put a binary column's buffers into `out` as `{name}_offsets`, `{name}_data` and
/// `{name}_validity` (None when nothing is null, as Arrow allows).
fn put_binary(
    py: Python<'_>,
    out: &Bound<'_, PyDict>,
    name: &str,
    column: &BinaryColumn,
) -> PyResult<()> {
    out.set_item(format!("{name}_offsets"), i32_bytes(py, &column.offsets))?;
    out.set_item(format!("{name}_data"), PyBytes::new(py, &column.data))?;
    out.set_item(format!("{name}_validity"), column.validity.to_py(py))?;
    out.set_item(format!("{name}_null_count"), column.validity.null_count)?;
    Ok(())
}

/// Decode the records section of one Fetch partition response into Arrow column buffers,
/// keeping only offsets in [start_offset, end_offset) and skipping control batches and the
/// batches of the `aborted` transactions ((producer id, first offset), as a read_committed
/// Fetch names them).
///
/// Returns a dict: `num_rows`; `next_offset` (the offset after the last complete batch, or
/// None when `records` holds no complete batch); little-endian buffers `offset` (int64),
/// `timestamp` (int64 microseconds), `timestamp_type` (int32); for `key` and `value`,
/// `*_offsets` (int32), `*_data`, `*_validity` (bitmap or None) and `*_null_count`; with
/// `include_headers`, `header_offsets` (int32 list offsets), `header_validity` and
/// `header_null_count` (a record without headers is a null list) and the same four entries
/// for `header_key` and `header_value`.
#[pyfunction]
#[pyo3(signature = (records, start_offset, end_offset, include_headers=false, aborted=Vec::new()))]
pub fn decode_arrow_columns<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    start_offset: i64,
    end_offset: i64,
    include_headers: bool,
    aborted: Vec<(i64, i64)>,
) -> PyResult<Bound<'py, PyDict>> {
    let buffer = PyBuffer::<u8>::get(records)?;
    let (raw, _) = borrow(&buffer)?;
    let columns = py
        .detach(move || {
            // SAFETY: `buffer` lives on this stack frame until after the closure returns.
            let data = unsafe { raw.as_slice() };
            let mut columns = Columns::new(include_headers);
            columns.decode(data, start_offset, end_offset, &aborted)?;
            Ok::<_, Error>(columns)
        })
        .map_err(CoreError)?;
    drop(buffer);

    let out = PyDict::new(py);
    out.set_item("num_rows", columns.offset.len())?;
    out.set_item("next_offset", columns.next_offset)?;
    out.set_item("offset", i64_bytes(py, &columns.offset))?;
    out.set_item("timestamp", i64_bytes(py, &columns.timestamp))?;
    out.set_item("timestamp_type", i32_bytes(py, &columns.timestamp_type))?;
    put_binary(py, &out, "key", &columns.key)?;
    put_binary(py, &out, "value", &columns.value)?;
    if include_headers {
        out.set_item("header_offsets", i32_bytes(py, &columns.header_offsets))?;
        out.set_item("header_validity", columns.header_validity.to_py(py))?;
        out.set_item("header_null_count", columns.header_validity.null_count)?;
        put_binary(py, &out, "header_key", &columns.header_key)?;
        put_binary(py, &out, "header_value", &columns.header_value)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafkalite_core::records::{encode_batch, Compression, Header, RecordInput};

    fn batch(base: i64, n: usize, codec: Compression) -> Vec<u8> {
        let records: Vec<RecordInput> = (0..n)
            .map(|i| RecordInput {
                timestamp: 1_000 + i as i64,
                key: (i % 2 == 0).then(|| format!("k{i}").into_bytes()),
                value: Some(format!("value-{i}").into_bytes()),
                headers: vec![Header {
                    key: b"h".to_vec(),
                    value: (i % 3 == 0).then(|| vec![i as u8]),
                }],
            })
            .collect();
        encode_batch(&records, codec, base).expect("encode")
    }

    #[test]
    fn keeps_exactly_the_range_and_skips_partial_tail() {
        let mut data = batch(0, 10, Compression::None);
        data.extend(batch(10, 10, Compression::Zstd));
        let third = batch(20, 10, Compression::Lz4);
        data.extend(&third[..third.len() / 2]);
        let mut columns = Columns::new(true);
        columns.decode(&data, 5, 15, &[]).expect("decode");
        assert_eq!(columns.offset, (5..15).collect::<Vec<_>>());
        assert_eq!(columns.next_offset, Some(20));
        assert_eq!(columns.timestamp[0], 1_005_000);
        assert_eq!(columns.key.len(), 10);
        // Offsets 5..15: odd offsets in each batch have null keys (5,7,9,11,13).
        assert_eq!(columns.key.validity.null_count, 5);
        assert_eq!(columns.header_validity.null_count, 0);
        assert_eq!(columns.value.data.len(), "value-5".len() * 10);
        assert_eq!(columns.header_offsets.len(), 11);
        assert_eq!(*columns.header_offsets.last().expect("offsets"), 10);
    }

    #[test]
    fn control_batches_are_skipped() {
        let mut control = batch(0, 1, Compression::None);
        // attributes at byte 21..23; set the control bit and refresh the CRC.
        control[22] |= 0x20;
        let crc = kafkalite_core::records::batch::crc32c(&control[21..]);
        control[17..21].copy_from_slice(&crc.to_be_bytes());
        control.extend(batch(1, 3, Compression::None));
        let mut columns = Columns::new(false);
        columns.decode(&control, 0, 100, &[]).expect("decode");
        assert_eq!(columns.offset, vec![1, 2, 3]);
        assert_eq!(columns.next_offset, Some(4));
    }

    #[test]
    fn a_batch_past_the_end_still_moves_the_position() {
        // As after compaction: the range is [3, 8) but the first batch left starts at 10.
        let data = batch(10, 5, Compression::None);
        let mut columns = Columns::new(false);
        columns.decode(&data, 3, 8, &[]).expect("decode");
        assert!(columns.offset.is_empty());
        assert_eq!(columns.next_offset, Some(10));
    }

    #[test]
    fn corrupt_crc_is_an_error() {
        let mut data = batch(0, 3, Compression::None);
        let last = data.len() - 1;
        data[last] ^= 0xff;
        assert!(Columns::new(false).decode(&data, 0, 10, &[]).is_err());
    }
}
