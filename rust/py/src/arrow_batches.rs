//! `encode_arrow_batches`: Arrow columns (the Spark sink's key/value/partition) straight to
//! RecordBatch v2 bytes per partition, with no Python object per row. The columns arrive
//! as their Arrow buffers (validity bitmap, int32 offsets, data), borrowed for the call.
//!
//! Partitions and batches are `kafkalite_client::RecordBatcher`'s: the row's own partition
//! when given, else murmur2 of the key, else (no key) one partition per batch in turn, as
//! the Java producer's sticky partitioner does.

use std::collections::BTreeMap;
use std::sync::Mutex;

use kafkalite_client::RecordBatcher;
use kafkalite_core::records::{Compression, HeaderRef};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::{borrow, RawBytes};
use crate::errors::CoreError;

/// A binary column as Python hands it over: (validity or None, offsets, data, offset, len).
type ColumnArgs<'py> = (
    Option<Bound<'py, PyAny>>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    usize,
    usize,
);

/// A borrowed Arrow binary column (int32 offsets).
struct BinaryColumn {
    _buffers: Vec<PyBuffer<u8>>,
    validity: Option<RawBytes>,
    offsets: RawBytes,
    data: RawBytes,
    offset: usize,
    len: usize,
}

impl BinaryColumn {
    fn borrow(args: &ColumnArgs<'_>, name: &str) -> PyResult<BinaryColumn> {
        let (validity, offsets, data, offset, len) = args;
        let mut buffers = Vec::new();
        let mut take = |b: &Bound<'_, PyAny>| -> PyResult<RawBytes> {
            let buffer = PyBuffer::<u8>::get(b)?;
            let (raw, _) = borrow(&buffer)?;
            buffers.push(buffer);
            Ok(raw)
        };
        let validity = validity.as_ref().map(&mut take).transpose()?;
        let offsets = take(offsets)?;
        let data = take(data)?;
        let column = BinaryColumn {
            _buffers: buffers,
            validity,
            offsets,
            data,
            offset: *offset,
            len: *len,
        };
        column.check(name)?;
        Ok(column)
    }

    /// Every offset in range and ascending, so `get` never reads outside the buffers.
    fn check(&self, name: &str) -> PyResult<()> {
        // SAFETY: the buffers are held in `_buffers` for the column's lifetime.
        let (offsets, data) = unsafe { (self.offsets.as_slice(), self.data.as_slice()) };
        let bad = |why: &str| Err(PyValueError::new_err(format!("column {name}: {why}")));
        if offsets.len() < (self.offset + self.len + 1) * 4 {
            return bad("the offsets buffer is shorter than the column");
        }
        if let Some(v) = &self.validity {
            // SAFETY: as above.
            if unsafe { v.as_slice() }.len() * 8 < self.offset + self.len {
                return bad("the validity bitmap is shorter than the column");
            }
        }
        let mut previous = offset_at(offsets, self.offset);
        for i in 1..=self.len {
            let next = offset_at(offsets, self.offset + i);
            if next < previous || next as usize > data.len() {
                return bad("offsets must ascend within the data buffer");
            }
            previous = next;
        }
        Ok(())
    }

    /// Bytes of data the column's rows span.
    fn data_len(&self) -> usize {
        // SAFETY: held buffers; `check` bounded every offset.
        let offsets = unsafe { self.offsets.as_slice() };
        let (first, last) = (
            offset_at(offsets, self.offset),
            offset_at(offsets, self.offset + self.len),
        );
        (last - first) as usize
    }

    fn get(&self, row: usize) -> Option<&[u8]> {
        let at = self.offset + row;
        if let Some(v) = &self.validity {
            // SAFETY: held buffers; `check` bounded the bitmap.
            let bits = unsafe { v.as_slice() };
            if bits[at / 8] & (1 << (at % 8)) == 0 {
                return None;
            }
        }
        // SAFETY: held buffers; `check` bounded every offset.
        let (offsets, data) = unsafe { (self.offsets.as_slice(), self.data.as_slice()) };
        let (start, end) = (offset_at(offsets, at), offset_at(offsets, at + 1));
        Some(&data[start as usize..end as usize])
    }
}

fn offset_at(offsets: &[u8], i: usize) -> u32 {
    let v = i32::from_le_bytes(offsets[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    v.max(0) as u32
}

/// Finished batches are copied into Python `bytes`, and the buffers they were built in are
/// kept for the next call: fresh memory costs a page fault per 4 KiB touched, which was a
/// quarter of the encoder's time. At most `SPARE_BYTES_MAX` bytes of buffers are kept, none
/// bigger than twice batch.size.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const SPARE_BYTES_MAX: usize = 16 << 20;

fn take_buffers() -> Vec<Vec<u8>> {
    SPARE
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}

fn keep_buffers(buffers: Vec<Vec<u8>>, batch_bytes: usize) {
    if let Ok(mut spare) = SPARE.lock() {
        let mut kept: usize = spare.iter().map(Vec::capacity).sum();
        for buffer in buffers {
            let size = buffer.capacity();
            if size <= 2 * batch_bytes.max(1 << 16) && kept + size <= SPARE_BYTES_MAX {
                kept += size;
                spare.push(buffer);
            }
        }
    }
}

/// The most partitions a topic written here may have: each gets a slot for its open batch.
const PARTITIONS_MAX: i32 = 1 << 20;

/// One row's headers, as (key, value) pairs; `None` for none.
type RowHeaders = Option<Vec<(String, Option<Vec<u8>>)>>;

/// One encoded batch: (partition, bytes, records).
type EncodedBatch<'py> = (i32, Bound<'py, PyBytes>, usize);

/// Encode `values` (and `keys`, `partitions`, `headers` when given) into RecordBatches of
/// at most about `batch_bytes` each, grouped by partition in row order. `sequences` maps a
/// partition to the next base sequence of an idempotent producer (`producer` = (id,
/// epoch)); `sticky` is the partition keyless rows start at.
#[pyfunction]
#[pyo3(signature = (values, num_partitions, *, keys=None, partitions=None, headers=None, compression="none", batch_bytes=1 << 20, producer=None, sequences=None, sticky=0, timestamp_ms=None))]
#[allow(clippy::too_many_arguments)]
pub fn encode_arrow_batches<'py>(
    py: Python<'py>,
    values: ColumnArgs<'py>,
    num_partitions: i32,
    keys: Option<ColumnArgs<'py>>,
    partitions: Option<Bound<'py, PyAny>>,
    headers: Option<Vec<RowHeaders>>,
    compression: &str,
    batch_bytes: usize,
    producer: Option<(i64, i16)>,
    sequences: Option<BTreeMap<i32, i32>>,
    sticky: i32,
    timestamp_ms: Option<i64>,
) -> PyResult<Vec<EncodedBatch<'py>>> {
    if !(1..=PARTITIONS_MAX).contains(&num_partitions) {
        return Err(PyValueError::new_err(format!(
            "num_partitions must be 1 to {PARTITIONS_MAX}, got {num_partitions}"
        )));
    }
    let codec = Compression::from_name(compression).map_err(CoreError)?;
    let values = BinaryColumn::borrow(&values, "value")?;
    let keys = keys
        .as_ref()
        .map(|k| BinaryColumn::borrow(k, "key"))
        .transpose()?;
    let rows = values.len;
    if keys.as_ref().is_some_and(|k| k.len != rows) {
        return Err(PyValueError::new_err(
            "key and value columns differ in length",
        ));
    }
    let partition_buffer = partitions.as_ref().map(PyBuffer::<i32>::get).transpose()?;
    let chosen: Option<Vec<i32>> = partition_buffer
        .as_ref()
        .map(|b| b.to_vec(py))
        .transpose()?;
    if chosen.as_ref().is_some_and(|p| p.len() != rows) {
        return Err(PyValueError::new_err(
            "partition and value columns differ in length",
        ));
    }
    if headers.as_ref().is_some_and(|h| h.len() != rows) {
        return Err(PyValueError::new_err(
            "headers and value columns differ in length",
        ));
    }
    if let Some(p) = chosen
        .iter()
        .flatten()
        .find(|&&p| p < -1 || p >= num_partitions)
    {
        return Err(PyValueError::new_err(format!(
            "partition {p} does not exist (the topic has {num_partitions})"
        )));
    }
    let timestamp = timestamp_ms.unwrap_or_else(kafkalite_core::storage::clock::now_ms);
    // Room for every row of this call in one batch: fresh memory is paid for in page
    // faults, so ask for no more than may be used.
    let capacity = values.data_len() + keys.as_ref().map_or(0, BinaryColumn::data_len) + 32 * rows;
    let batcher = RecordBatcher::new(
        num_partitions,
        codec,
        batch_bytes,
        producer,
        sequences.unwrap_or_default(),
        sticky,
    )
    .with_buffers(take_buffers(), capacity);
    // The columns move in and back out, so their buffers are released with the GIL held.
    let (encoded, _values, _keys) = py.detach(move || {
        let encoded = (|| {
            let mut batcher = batcher;
            let mut row_headers: Vec<HeaderRef<'_>> = Vec::new();
            for row in 0..rows {
                row_headers.clear();
                if let Some(hs) = headers.as_ref().and_then(|h| h[row].as_ref()) {
                    row_headers.extend(hs.iter().map(|(k, v)| HeaderRef {
                        key: k.as_bytes(),
                        value: v.as_deref(),
                    }));
                }
                let partition = chosen.as_ref().map(|p| p[row]).filter(|&p| p >= 0);
                let key = keys.as_ref().and_then(|k| k.get(row));
                batcher.add(timestamp, partition, key, values.get(row), &row_headers)?;
            }
            batcher.finish()
        })();
        (encoded, values, keys)
    });
    let (encoded, mut buffers) = encoded.map_err(CoreError)?;
    let out = encoded
        .into_iter()
        .map(|(p, bytes, count)| {
            let batch = PyBytes::new(py, &bytes);
            buffers.push(bytes);
            (p, batch, count)
        })
        .collect();
    keep_buffers(buffers, batch_bytes);
    Ok(out)
}
