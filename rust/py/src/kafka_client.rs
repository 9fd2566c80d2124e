//! `KafkaClient`: the Rust Kafka client (`kafkalite-client`) as Python sees it. Every call
//! that talks to a broker releases the GIL; broker error codes raise the `KafkaliteError`
//! family, unreachable brokers `ConnectionError`, bad bootstrap lists `ValueError`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use kafkalite_client::{self as client, BlockingClient, ClientConfig};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyConnectionError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::kafka_error;

/// Map a client failure to the exception a Python caller expects.
fn client_error(e: client::Error) -> PyErr {
    let message = e.to_string();
    match e {
        client::Error::InvalidBootstrap(_) => PyValueError::new_err(message),
        client::Error::Io { .. } | client::Error::NoBrokerReachable { .. } => {
            PyConnectionError::new_err(message)
        }
        client::Error::Broker { code, .. } => kafka_error(code, message),
        client::Error::Protocol { .. } | client::Error::UnsupportedVersion { .. } => {
            kafka_error(-1, message)
        }
    }
}

/// An immutable `bytes` object's contents without a copy (the object is kept alive with
/// them; its data never moves); any other buffer is copied.
fn shared_bytes(py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    struct Owned {
        _owner: Py<PyBytes>,
        ptr: *const u8,
        len: usize,
    }
    // SAFETY: a bytes object's data is immutable and lives as long as the object, which
    // `Owned` holds; Py<T> may be dropped without the GIL (the decref waits for it).
    unsafe impl Send for Owned {}
    impl AsRef<[u8]> for Owned {
        fn as_ref(&self) -> &[u8] {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
    if let Ok(bytes) = records.cast::<PyBytes>() {
        let data = bytes.as_bytes();
        let (ptr, len) = (data.as_ptr(), data.len());
        let owner = bytes.clone().unbind();
        return Ok(Bytes::from_owner(Owned {
            _owner: owner,
            ptr,
            len,
        }));
    }
    let buffer = PyBuffer::<u8>::get(records)?;
    Ok(Bytes::from(buffer.to_vec(py)?))
}

/// One partition's metadata.
#[pyclass(module = "kafkalite._core", frozen, get_all)]
#[derive(Clone)]
pub struct PartitionMetadata {
    topic: String,
    partition: i32,
    error_code: i16,
    /// Node id of the leader, -1 when there is none.
    leader: i32,
    leader_epoch: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
}

#[pymethods]
impl PartitionMetadata {
    fn __repr__(&self) -> String {
        format!(
            "PartitionMetadata(topic={:?}, partition={}, leader={})",
            self.topic, self.partition, self.leader
        )
    }
}

/// One topic's metadata; `error_code` 3 (UNKNOWN_TOPIC_OR_PARTITION) for a missing topic.
#[pyclass(module = "kafkalite._core", frozen, get_all)]
#[derive(Clone)]
pub struct TopicMetadata {
    name: String,
    error_code: i16,
    is_internal: bool,
    partitions: Vec<PartitionMetadata>,
}

/// A Metadata answer: brokers by node id, topics by name (with or without an error).
#[pyclass(module = "kafkalite._core", frozen, get_all)]
pub struct ClusterMetadata {
    brokers: HashMap<i32, (String, u16)>,
    topics: HashMap<String, TopicMetadata>,
}

impl From<client::Metadata> for ClusterMetadata {
    fn from(m: client::Metadata) -> Self {
        let topics = m
            .topics
            .into_iter()
            .map(|(name, t)| {
                let partitions = t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionMetadata {
                        topic: name.clone(),
                        partition: p.partition,
                        error_code: p.error_code,
                        leader: p.leader,
                        leader_epoch: p.leader_epoch,
                        replicas: p.replicas,
                        isr: p.isr,
                    })
                    .collect();
                let topic = TopicMetadata {
                    name: name.clone(),
                    error_code: t.error_code,
                    is_internal: t.is_internal,
                    partitions,
                };
                (name, topic)
            })
            .collect();
        ClusterMetadata {
            brokers: m
                .brokers
                .into_iter()
                .map(|(id, a)| (id, (a.host, a.port)))
                .collect(),
            topics,
        }
    }
}

/// One partition's Fetch answer; `records` holds the raw batches as sent (complete ones,
/// possibly a trailing partial one).
#[pyclass(module = "kafkalite._core", frozen, get_all)]
pub struct FetchedPartition {
    error_code: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    records: Py<PyBytes>,
    /// read_committed: (producer id, first offset) of the aborted transactions in
    /// `records`.
    aborted_transactions: Vec<(i64, i64)>,
}

/// What the leader did with a produced batch (-1s with acks=0).
#[pyclass(module = "kafkalite._core", frozen, get_all)]
pub struct ProduceResult {
    base_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
}

#[pyclass(module = "kafkalite._core", frozen)]
pub struct KafkaClient {
    inner: Mutex<BlockingClient>,
    bootstrap_servers: String,
}

impl KafkaClient {
    /// Run `call` without the GIL. The client's lock is taken inside, so a thread waiting
    /// for it never holds the GIL that the thread using it needs to return.
    fn detached<T: Send>(
        &self,
        py: Python<'_>,
        call: impl FnOnce(&mut BlockingClient) -> client::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut client = self.inner.lock().map_err(|_| None)?;
            call(&mut client).map_err(Some)
        })
        .map_err(|e| match e {
            Some(e) => client_error(e),
            None => PyRuntimeError::new_err("Kafka client lock poisoned"),
        })
    }
}

#[pymethods]
impl KafkaClient {
    /// A client for the cluster `bootstrap_servers` (`host:port,...`) names; connections
    /// open on first use, to the bootstrap servers and then to partition leaders.
    #[new]
    #[pyo3(signature = (bootstrap_servers, client_id="kafkalite", request_timeout_ms=30_000, response_bytes_max=512 << 20))]
    fn new(
        bootstrap_servers: String,
        client_id: &str,
        request_timeout_ms: u64,
        response_bytes_max: usize,
    ) -> PyResult<Self> {
        let config = ClientConfig {
            client_id: client_id.to_string(),
            response_bytes_max,
            request_timeout: Duration::from_millis(request_timeout_ms),
            ..ClientConfig::default()
        };
        let inner = BlockingClient::new(&bootstrap_servers, config).map_err(client_error)?;
        Ok(KafkaClient {
            inner: Mutex::new(inner),
            bootstrap_servers,
        })
    }

    #[getter]
    fn bootstrap_servers(&self) -> &str {
        &self.bootstrap_servers
    }

    /// Describe `topics` (None: every topic) without creating any.
    #[pyo3(signature = (topics=None))]
    fn metadata(&self, py: Python<'_>, topics: Option<Vec<String>>) -> PyResult<ClusterMetadata> {
        self.detached(py, |c| c.metadata(topics.as_deref()))
            .map(ClusterMetadata::from)
    }

    /// For each (topic, partition) -> timestamp (-2 earliest, -1 latest), the offset the
    /// leader answers; -1 when no record reaches the timestamp. With `isolation_level` 1
    /// (read_committed), latest is the last stable offset.
    #[pyo3(signature = (wanted, isolation_level=0))]
    fn list_offsets(
        &self,
        py: Python<'_>,
        wanted: HashMap<(String, i32), i64>,
        isolation_level: i8,
    ) -> PyResult<HashMap<(String, i32), i64>> {
        let wanted: BTreeMap<_, _> = wanted.into_iter().collect();
        self.detached(py, |c| c.list_offsets_isolated(&wanted, isolation_level))
            .map(|found| found.into_iter().collect())
    }

    /// One Fetch of `topic`/`partition` from `offset` at its leader, held by the broker up
    /// to `max_wait_ms` for data. Partition errors come back as `error_code`.
    #[pyo3(signature = (topic, partition, offset, max_bytes, max_wait_ms=0, isolation_level=0))]
    #[allow(clippy::too_many_arguments)]
    fn fetch(
        &self,
        py: Python<'_>,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
        max_wait_ms: i32,
        isolation_level: i8,
    ) -> PyResult<FetchedPartition> {
        let fetched = self.detached(py, |c| {
            c.fetch(
                topic,
                partition,
                offset,
                max_bytes,
                max_wait_ms,
                isolation_level,
            )
        })?;
        Ok(FetchedPartition {
            error_code: fetched.error_code,
            high_watermark: fetched.high_watermark,
            last_stable_offset: fetched.last_stable_offset,
            log_start_offset: fetched.log_start_offset,
            records: PyBytes::new(py, &fetched.records).unbind(),
            aborted_transactions: fetched.aborted_transactions,
        })
    }

    /// Append `records` (RecordBatch v2 bytes) to `topic`/`partition` at its leader.
    #[pyo3(signature = (topic, partition, records, acks=1, timeout_ms=30_000))]
    fn produce(
        &self,
        py: Python<'_>,
        topic: &str,
        partition: i32,
        records: &Bound<'_, PyAny>,
        acks: i16,
        timeout_ms: i32,
    ) -> PyResult<ProduceResult> {
        let buffer = PyBuffer::<u8>::get(records)?;
        let records = Bytes::from(buffer.to_vec(py)?);
        let produced = self.detached(py, |c| {
            c.produce(topic, partition, records, acks, timeout_ms)
        })?;
        Ok(ProduceResult {
            base_offset: produced.base_offset,
            log_append_time_ms: produced.log_append_time_ms,
            log_start_offset: produced.log_start_offset,
        })
    }

    /// Append each (partition, records) of `topic` in one Produce request per leader.
    /// Returns (partition, error code, base offset) per partition, in leader order: a
    /// partition's broker error is its code (base offset -1), not an exception; a failed
    /// request raises as `produce` does.
    #[pyo3(signature = (topic, batches, acks=1, timeout_ms=30_000))]
    fn produce_batches(
        &self,
        py: Python<'_>,
        topic: &str,
        batches: Vec<(i32, Bound<'_, PyAny>)>,
        acks: i16,
        timeout_ms: i32,
    ) -> PyResult<Vec<(i32, i16, i64)>> {
        let batches = batches
            .iter()
            .map(|(partition, records)| Ok((*partition, shared_bytes(py, records)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let answers = self.detached(py, |c| c.produce_batches(topic, batches, acks, timeout_ms))?;
        answers
            .into_iter()
            .map(|(partition, result)| match result {
                Ok(produced) => Ok((partition, 0, produced.base_offset)),
                Err(client::Error::Broker { code, .. }) => Ok((partition, code, -1)),
                Err(e) => Err(client_error(e)),
            })
            .collect()
    }

    /// A new producer id and epoch for an idempotent producer (`transactional_id` None);
    /// a broker without transactions refuses a transactional id with its error code.
    #[pyo3(signature = (transactional_id=None, timeout_ms=60_000))]
    fn init_producer_id(
        &self,
        py: Python<'_>,
        transactional_id: Option<String>,
        timeout_ms: i32,
    ) -> PyResult<(i64, i16)> {
        self.detached(py, |c| {
            c.init_producer_id(transactional_id.as_deref(), timeout_ms)
        })
    }

    /// The coordinator of `key` (`key_type` 0: a group, 1: a transactional id) as the
    /// first reachable bootstrap broker answers: (node id, host, port).
    #[pyo3(signature = (key, key_type=0))]
    fn find_coordinator(
        &self,
        py: Python<'_>,
        key: String,
        key_type: i8,
    ) -> PyResult<(i32, String, i32)> {
        self.detached(py, |c| c.find_coordinator(&key, key_type))
    }

    /// Close every connection (they reopen on the next call).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.detached(py, |c| {
            c.close();
            Ok(())
        })
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

    fn __repr__(&self) -> String {
        format!("KafkaClient({:?})", self.bootstrap_servers)
    }
}
