//! `PartitionLog` and `FileSlice`: the storage core as Python sees it. Every call that can
//! touch the disk releases the GIL.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Once};

use kafkalite_core::io::{self, engine_kind};
use kafkalite_core::storage::clock::now_ms;
use kafkalite_core::storage::damage::{Damage, DamageAction};
use kafkalite_core::storage::scrubber::scrub_segment;
use kafkalite_core::storage::{
    compact_shared, CompactionStats as CoreStats, DirLock, LogConfig, PartitionLog as CoreLog,
    ReadSlice,
};
use kafkalite_core::Error;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::borrow;
use crate::errors::{kafka_error, CoreError};
use kafkalite_core::error_codes as codes;

static ENGINE_LOGGED: Once = Once::new();

/// A damaged range as Python sees it: (segment, from, to, first offset, action, why).
type DamageRow = (i64, u64, u64, i64, &'static str, String);

fn damage_row(d: &Damage) -> DamageRow {
    let action = match d.action {
        DamageAction::Fail => "fail",
        DamageAction::Skip => "skip",
    };
    (
        d.segment,
        d.from,
        d.to,
        d.first_offset,
        action,
        d.why.clone(),
    )
}

/// Say once per process which write engine is in use, through Python's logging.
fn log_engine_once(py: Python<'_>) {
    ENGINE_LOGGED.call_once(|| {
        let kind = engine_kind();
        let reason = io::engine_fallback_reason()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let msg = format!("kafkalite storage I/O engine: {}{}", kind.name(), reason);
        let logged = py
            .import("logging")
            .and_then(|logging| logging.call_method1("getLogger", ("kafkalite.io",)))
            .and_then(|logger| logger.call_method1("info", (msg,)));
        if let Err(e) = logged {
            e.print(py);
        }
    });
}

pub fn config_from(values: Option<HashMap<String, Bound<'_, PyAny>>>) -> PyResult<LogConfig> {
    let mut config = LogConfig::default();
    for (key, value) in values.unwrap_or_default() {
        let text = value.str()?.to_string();
        config.set(&key, &text).map_err(CoreError)?;
    }
    Ok(config)
}

#[pyclass(module = "kafkalite._core", frozen)]
pub struct AppendInfo {
    #[pyo3(get)]
    first_offset: i64,
    #[pyo3(get)]
    last_offset: i64,
    #[pyo3(get)]
    log_append_time: i64,
    #[pyo3(get)]
    max_timestamp: i64,
    #[pyo3(get)]
    batch_count: usize,
    #[pyo3(get)]
    record_count: i64,
}

#[pymethods]
impl AppendInfo {
    fn __repr__(&self) -> String {
        format!(
            "AppendInfo(first_offset={}, last_offset={}, record_count={})",
            self.first_offset, self.last_offset, self.record_count
        )
    }
}

/// What one compaction pass did; byte and record counts cover the segments it examined.
#[pyclass(module = "kafkalite._core", frozen, get_all)]
pub struct CompactionStats {
    /// Why nothing was cleaned, when nothing was.
    skipped: Option<String>,
    dirty_ratio: f64,
    first_dirty_offset: i64,
    cleaned_up_to: i64,
    segments_cleaned: usize,
    segments_after: usize,
    bytes_before: u64,
    bytes_after: u64,
    bytes_read: u64,
    records_kept: u64,
    records_removed: u64,
    tombstones_removed: u64,
    duration_ms: f64,
    mb_per_sec: f64,
}

impl From<CoreStats> for CompactionStats {
    fn from(s: CoreStats) -> Self {
        CompactionStats {
            skipped: s.skipped.map(str::to_string),
            dirty_ratio: s.dirty_ratio,
            first_dirty_offset: s.first_dirty_offset,
            cleaned_up_to: s.cleaned_up_to,
            segments_cleaned: s.segments_cleaned,
            segments_after: s.segments_after,
            bytes_before: s.bytes_before,
            bytes_after: s.bytes_after,
            bytes_read: s.bytes_read,
            records_kept: s.records_kept,
            records_removed: s.records_removed,
            tombstones_removed: s.tombstones_removed,
            duration_ms: s.duration.as_secs_f64() * 1e3,
            mb_per_sec: s.mb_per_sec(),
        }
    }
}

#[pymethods]
impl CompactionStats {
    fn __repr__(&self) -> String {
        match &self.skipped {
            Some(reason) => format!(
                "CompactionStats(skipped={reason:?}, dirty_ratio={:.3})",
                self.dirty_ratio
            ),
            None => format!(
                "CompactionStats(segments_cleaned={}, bytes_before={}, bytes_after={}, \
                 records_kept={}, records_removed={}, tombstones_removed={}, \
                 duration_ms={:.1}, mb_per_sec={:.1})",
                self.segments_cleaned,
                self.bytes_before,
                self.bytes_after,
                self.records_kept,
                self.records_removed,
                self.tombstones_removed,
                self.duration_ms,
                self.mb_per_sec
            ),
        }
    }
}

/// Whole batches of one segment file: sent with sendfile, or read into bytes.
#[pyclass(module = "kafkalite._core", frozen)]
pub struct FileSlice {
    slice: ReadSlice,
}

#[pymethods]
impl FileSlice {
    #[getter]
    fn position(&self) -> u64 {
        self.slice.position
    }
    #[getter]
    fn length(&self) -> u64 {
        self.slice.len
    }
    #[getter]
    fn first_offset(&self) -> i64 {
        self.slice.first_offset
    }
    fn __len__(&self) -> usize {
        self.slice.len as usize
    }
    /// The segment file's descriptor, valid while this slice lives.
    fn fileno(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.slice.file.as_raw_fd()
    }
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        use std::os::unix::fs::FileExt;
        let len = self.slice.len as usize;
        let file = Arc::clone(&self.slice.file);
        let position = self.slice.position;
        PyBytes::new_with(py, len, |buf| {
            py.detach(|| file.read_exact_at(buf, position))
                .map_err(|e| PyOSError::new_err(e.to_string()))
        })
    }
    /// Send bytes `[start, len)` of the slice to a non-blocking socket without copying them
    /// through user space. Returns how many were sent before the socket would block.
    #[pyo3(signature = (sock_fd, start=0))]
    fn send(&self, py: Python<'_>, sock_fd: i32, start: u64) -> PyResult<usize> {
        let remaining = self.slice.len.saturating_sub(start) as usize;
        let file = Arc::clone(&self.slice.file);
        let position = self.slice.position + start;
        py.detach(|| io::sendfile_some(&file, position, remaining, sock_fd))
            .map_err(|e| PyOSError::new_err(e.to_string()))
    }
    /// Send the whole slice, waiting (up to `timeout_ms` per wait) when the socket is full.
    #[pyo3(signature = (sock_fd, timeout_ms=30_000))]
    fn send_all(&self, py: Python<'_>, sock_fd: i32, timeout_ms: i32) -> PyResult<usize> {
        let file = Arc::clone(&self.slice.file);
        let (position, len) = (self.slice.position, self.slice.len as usize);
        py.detach(|| io::sendfile_all(&file, position, len, sock_fd, timeout_ms))
            .map_err(|e| PyOSError::new_err(e.to_string()))
    }
}

/// One partition's segmented commit log.
#[pyclass(module = "kafkalite._core", frozen)]
pub struct PartitionLog {
    inner: Mutex<CoreLog>,
    path: PathBuf,
    /// The partition dir's `.lock`, held from open to close so no broker or second
    /// `PartitionLog` appends to the same files meanwhile.
    dir_lock: Mutex<Option<DirLock>>,
}

impl PartitionLog {
    fn lock(&self) -> PyResult<MutexGuard<'_, CoreLog>> {
        self.inner
            .lock()
            .map_err(|_| kafka_error(codes::KAFKA_STORAGE_ERROR, "partition log lock poisoned"))
    }
}

#[pymethods]
impl PartitionLog {
    #[new]
    #[pyo3(signature = (path, config=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        config: Option<HashMap<String, Bound<'_, PyAny>>>,
    ) -> PyResult<Self> {
        log_engine_once(py);
        let config = config_from(config)?;
        let dir = path.clone();
        let (dir_lock, log) = py
            .detach(|| {
                let dir_lock = DirLock::acquire(&dir)?;
                CoreLog::open(dir, config).map(|log| (dir_lock, log))
            })
            .map_err(CoreError)?;
        Ok(PartitionLog {
            inner: Mutex::new(log),
            path,
            dir_lock: Mutex::new(Some(dir_lock)),
        })
    }

    /// Validate, assign offsets and append one producer `records` field (one or more
    /// RecordBatch v2). A writable buffer (bytearray, memoryview of one) is updated in place
    /// with the assigned offsets; read-only bytes are left as they are.
    #[pyo3(signature = (records, now_ms=None))]
    fn append(
        &self,
        py: Python<'_>,
        records: &Bound<'_, PyAny>,
        now_ms: Option<i64>,
    ) -> PyResult<AppendInfo> {
        let buffer = PyBuffer::<u8>::get(records)?;
        let (mut raw, writable) = borrow(&buffer)?;
        let now = now_ms.unwrap_or_else(kafkalite_core::storage::clock::now_ms);
        let info = py.detach(|| {
            let mut log = self.inner.lock().map_err(|_| Error::Closed)?;
            if writable {
                // SAFETY: `buffer` lives until this function returns and is writable.
                log.append(unsafe { raw.as_mut_slice() }, now)
            } else {
                // SAFETY: as above; read-only bytes are written with offsets patched in the
                // iovec list, without a copy.
                log.append_shared(unsafe { raw.as_slice() }, now)
            }
        });
        drop(buffer);
        let info = info.map_err(CoreError)?;
        Ok(AppendInfo {
            first_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time: info.log_append_time,
            max_timestamp: info.max_timestamp,
            batch_count: info.batch_count,
            record_count: info.record_count,
        })
    }

    /// Whole batches from the one holding `offset`, as bytes (empty at the log end).
    #[pyo3(signature = (offset, max_bytes=1_048_576, max_offset=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.read_slice(py, offset, max_bytes, max_offset)? {
            Some(slice) => slice.read(py),
            None => Ok(PyBytes::new(py, b"")),
        }
    }

    /// Like `read` but returns a `FileSlice` to send with sendfile, or None at the log end.
    #[pyo3(signature = (offset, max_bytes=1_048_576, max_offset=None))]
    fn read_slice(
        &self,
        py: Python<'_>,
        offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
    ) -> PyResult<Option<FileSlice>> {
        let slice = py
            .detach(|| {
                self.inner
                    .lock()
                    .map_err(|_| Error::Closed)?
                    .read(offset, max_bytes, max_offset)
            })
            .map_err(CoreError)?;
        Ok(slice.map(|slice| FileSlice { slice }))
    }

    /// (offset, timestamp) of the first record with timestamp >= `timestamp`, or None.
    fn offset_for_timestamp(&self, py: Python<'_>, timestamp: i64) -> PyResult<Option<(i64, i64)>> {
        py.detach(|| {
            self.inner
                .lock()
                .map_err(|_| Error::Closed)?
                .offset_for_timestamp(timestamp)
        })
        .map_err(|e| CoreError(e).into())
    }

    /// (offset, timestamp) of the record with the largest timestamp, or None when empty.
    fn max_timestamp_offset(&self, py: Python<'_>) -> PyResult<Option<(i64, i64)>> {
        py.detach(|| {
            self.inner
                .lock()
                .map_err(|_| Error::Closed)?
                .max_timestamp_offset()
        })
        .map_err(|e| CoreError(e).into())
    }

    /// Verify every batch of every segment (the active one too: scrub offline, with no
    /// broker running), mark what is damaged, then apply `action` to every mark: "skip"
    /// (reads serve around it) or "truncate" (cut the log at the first damaged offset).
    /// Returns the marks as (segment, from, to, first offset, action, why).
    #[pyo3(signature = (action=None))]
    fn scrub(&self, py: Python<'_>, action: Option<&str>) -> PyResult<Vec<DamageRow>> {
        let (skip, truncate) = match action {
            None => (false, false),
            Some("skip") => (true, false),
            Some("truncate") => (false, true),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "scrub action must be skip or truncate, not {other:?}"
                )))
            }
        };
        py.detach(|| -> kafkalite_core::Result<Vec<DamageRow>> {
            let mut log = self.inner.lock().map_err(|_| Error::Closed)?;
            for target in log.scrub_targets(true) {
                let found = scrub_segment(&target, |_| ControlFlow::Continue(()))?;
                log.record_damage(&target, found.damages)?;
            }
            if skip {
                log.set_damage_action(DamageAction::Skip)?;
            }
            let rows = log.damaged().iter().map(damage_row).collect::<Vec<_>>();
            if truncate {
                if let Some(first) = log.damaged().iter().map(|d| d.first_offset).min() {
                    log.truncate_to(first)?;
                }
            }
            Ok(rows)
        })
        .map_err(|e| CoreError(e).into())
    }

    fn truncate_to(&self, py: Python<'_>, offset: i64) -> PyResult<()> {
        py.detach(|| {
            self.inner
                .lock()
                .map_err(|_| Error::Closed)?
                .truncate_to(offset)
        })
        .map_err(|e| CoreError(e).into())
    }

    fn truncate_fully_and_start_at(&self, py: Python<'_>, offset: i64) -> PyResult<()> {
        py.detach(|| {
            self.inner
                .lock()
                .map_err(|_| Error::Closed)?
                .truncate_fully_and_start_at(offset)
        })
        .map_err(|e| CoreError(e).into())
    }

    /// Delete whole segments past retention.ms / retention.bytes (the active one too once
    /// all of it expired: a standalone log's every offset is committed); returns how many.
    #[pyo3(signature = (now_ms=None))]
    fn apply_retention(&self, py: Python<'_>, now_ms: Option<i64>) -> PyResult<usize> {
        let now = now_ms.unwrap_or_else(now_ms_default);
        py.detach(|| {
            let mut log = self.inner.lock().map_err(|_| Error::Closed)?;
            let end = log.log_end_offset();
            log.apply_retention(now, end)
        })
        .map_err(|e| CoreError(e).into())
    }

    /// One compaction pass (a no-op unless `cleanup.policy` includes compact). Runs when the
    /// dirty ratio reaches `min.cleanable.dirty.ratio`, when `max.compaction.lag.ms` is
    /// exceeded, or when `force`d. The partition stays available meanwhile: the lock is
    /// held only to snapshot the segments and to swap the cleaned ones in.
    #[pyo3(signature = (now_ms=None, force=false))]
    fn compact(
        &self,
        py: Python<'_>,
        now_ms: Option<i64>,
        force: bool,
    ) -> PyResult<CompactionStats> {
        let now = now_ms.unwrap_or_else(now_ms_default);
        let stats = py
            .detach(|| compact_shared(&self.inner, now, force))
            .map_err(CoreError)?;
        Ok(stats.into())
    }

    fn advance_log_start(&self, py: Python<'_>, offset: i64) -> PyResult<()> {
        py.detach(|| {
            self.inner
                .lock()
                .map_err(|_| Error::Closed)?
                .advance_log_start(offset)
        })
        .map_err(|e| CoreError(e).into())
    }

    fn roll(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.lock().map_err(|_| Error::Closed)?.roll())
            .map_err(|e| CoreError(e).into())
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.lock().map_err(|_| Error::Closed)?.flush())
            .map_err(|e| CoreError(e).into())
    }

    /// Flush indexes and mark a clean shutdown; further calls raise KafkaStorageError.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.lock().map_err(|_| Error::Closed)?.close())
            .map_err(CoreError)?;
        // Only a cleanly closed log gives up its dir.
        if let Ok(mut held) = self.dir_lock.lock() {
            held.take();
        }
        Ok(())
    }

    /// Replace the topic-level config (keys as Kafka spells them; unset keys take defaults).
    fn set_config(&self, config: Option<HashMap<String, Bound<'_, PyAny>>>) -> PyResult<()> {
        let config = config_from(config)?;
        self.lock()?.set_config(config);
        Ok(())
    }

    #[getter]
    fn log_start_offset(&self) -> PyResult<i64> {
        Ok(self.lock()?.log_start_offset())
    }
    #[getter]
    fn log_end_offset(&self) -> PyResult<i64> {
        Ok(self.lock()?.log_end_offset())
    }
    #[getter]
    fn size_bytes(&self) -> PyResult<u64> {
        Ok(self.lock()?.size_bytes())
    }
    #[getter]
    fn segment_base_offsets(&self) -> PyResult<Vec<i64>> {
        Ok(self.lock()?.segment_base_offsets())
    }
    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.lock()?.is_closed())
    }
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Bound<'_, PyAny>,
        _v: Bound<'_, PyAny>,
        _tb: Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> PyResult<String> {
        let log = self.lock()?;
        Ok(format!(
            "PartitionLog(path={:?}, log_start_offset={}, log_end_offset={})",
            self.path,
            log.log_start_offset(),
            log.log_end_offset()
        ))
    }
}

fn now_ms_default() -> i64 {
    now_ms()
}
