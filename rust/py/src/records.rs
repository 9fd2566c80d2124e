//! Building and decoding record batches from Python: for tests, the CLI and tools. The
//! broker's data path never calls these (it moves batches as opaque bytes).

use kafkalite_core::records::{
    decode_records, encode_producer_batch, validate_batch, BatchProducer, Compression, Header,
    RecordInput,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::CoreError;

type PyHeader = (Vec<u8>, Option<Vec<u8>>);
/// (offset, timestamp, key, value, headers)
type PyRecord<'py> = (
    i64,
    i64,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Vec<(String, Option<Bound<'py, PyBytes>>)>,
);

fn header_key(item: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = item.extract::<String>() {
        return Ok(s.into_bytes());
    }
    item.extract::<Vec<u8>>()
}

fn record_input(item: &Bound<'_, PyAny>, default_ts: i64) -> PyResult<RecordInput> {
    let tuple = item.downcast::<PyTuple>().map_err(|_| {
        PyValueError::new_err("each record must be a tuple (key, value[, timestamp_ms[, headers]])")
    })?;
    if !(2..=4).contains(&tuple.len()) {
        return Err(PyValueError::new_err(format!(
            "a record tuple has 2 to 4 items, got {}",
            tuple.len()
        )));
    }
    let key: Option<Vec<u8>> = tuple.get_item(0)?.extract()?;
    let value: Option<Vec<u8>> = tuple.get_item(1)?.extract()?;
    let timestamp = match tuple.get_item(2) {
        Ok(ts) if !ts.is_none() => ts.extract()?,
        _ => default_ts,
    };
    let mut headers = Vec::new();
    if let Ok(list) = tuple.get_item(3) {
        for h in list.try_iter()? {
            let (k, v): (Bound<'_, PyAny>, Option<Vec<u8>>) = h?.extract()?;
            let header: PyHeader = (header_key(&k)?, v);
            headers.push(Header {
                key: header.0,
                value: header.1,
            });
        }
    }
    Ok(RecordInput {
        timestamp,
        key,
        value,
        headers,
    })
}

/// Encode records into one RecordBatch v2; `producer_id`, `producer_epoch` and
/// `base_sequence` stamp an idempotent producer's batch (-1: none).
#[pyfunction]
#[pyo3(signature = (records, compression="none", base_offset=0, timestamp_ms=None, *, producer_id=-1, producer_epoch=-1, base_sequence=-1))]
#[allow(clippy::too_many_arguments)]
pub fn build_batch<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    compression: &str,
    base_offset: i64,
    timestamp_ms: Option<i64>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
) -> PyResult<Bound<'py, PyBytes>> {
    let producer = BatchProducer {
        id: producer_id,
        epoch: producer_epoch,
        base_sequence,
    };
    let codec = Compression::from_name(compression).map_err(CoreError)?;
    let default_ts = timestamp_ms.unwrap_or_else(kafkalite_core::storage::clock::now_ms);
    let inputs = records
        .try_iter()?
        .map(|item| record_input(&item?, default_ts))
        .collect::<PyResult<Vec<_>>>()?;
    let bytes = py
        .detach(|| encode_producer_batch(&inputs, codec, base_offset, producer))
        .map_err(CoreError)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Decode every record of the complete batches in `data` (a trailing partial batch, as a
/// fetch response may carry, is ignored): a list of (offset, timestamp, key, value, headers).
#[pyfunction]
pub fn decode_batches<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Vec<PyRecord<'py>>> {
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() >= 12 {
        let length = i32::from_be_bytes(rest[8..12].try_into().expect("4 bytes"));
        let total = 12usize.saturating_add(length.max(0) as usize);
        if total > rest.len() {
            break;
        }
        let (batch, tail) = rest.split_at(total);
        validate_batch(batch).map_err(CoreError)?;
        for r in decode_records(batch).map_err(CoreError)? {
            let headers = r
                .headers
                .into_iter()
                .map(|h| {
                    (
                        String::from_utf8_lossy(&h.key).into_owned(),
                        h.value.map(|v| PyBytes::new(py, &v)),
                    )
                })
                .collect();
            out.push((
                r.offset,
                r.timestamp,
                r.key.map(|k| PyBytes::new(py, &k)),
                r.value.map(|v| PyBytes::new(py, &v)),
                headers,
            ));
        }
        rest = tail;
    }
    Ok(out)
}

/// CRC-32C as Kafka's RecordBatch uses it.
#[pyfunction]
pub fn crc32c(py: Python<'_>, data: &[u8]) -> u32 {
    py.detach(|| kafkalite_core::records::batch::crc32c(data))
}
