//! `BrokerServer`: the wire-protocol broker running on its own tokio threads inside this
//! process. Python starts and stops it; requests never enter Python.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use kafkalite_broker::{Broker, BrokerConfig};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

use crate::errors::{kafka_error, CoreError};
use crate::partition_log::CompactionStats;
use kafkalite_core::error_codes as codes;

#[pyclass(module = "kafkalite._core", frozen)]
pub struct BrokerServer {
    inner: Mutex<Option<Broker>>,
    addresses: Vec<(String, String, u16)>,
    advertised: Vec<(String, String, u16)>,
}

#[pymethods]
impl BrokerServer {
    /// Validate `config` (Kafka's broker keys, string values), open the logs, bind the
    /// listeners and start serving.
    #[new]
    #[pyo3(signature = (config, worker_threads=2))]
    fn new(
        py: Python<'_>,
        config: HashMap<String, String>,
        worker_threads: usize,
    ) -> PyResult<Self> {
        let pairs: BTreeMap<String, String> = config.into_iter().collect();
        let config = BrokerConfig::from_pairs(&pairs)
            .map_err(|e| kafka_error(codes::INVALID_CONFIG, e.to_string()))?;
        let broker = py
            .detach(|| Broker::start(config, worker_threads))
            .map_err(start_error)?;
        let addresses: Vec<(String, String, u16)> = broker
            .addresses()
            .iter()
            .map(|(name, addr)| (name.clone(), addr.ip().to_string(), addr.port()))
            .collect();
        let advertised = broker.advertised_listeners();
        Ok(BrokerServer {
            inner: Mutex::new(Some(broker)),
            addresses,
            advertised,
        })
    }

    /// (listener name, bound host, bound port) for each listener.
    #[getter]
    fn addresses(&self) -> Vec<(String, String, u16)> {
        self.addresses.clone()
    }

    /// (listener name, host, port) as clients are told in Metadata.
    #[getter]
    fn advertised_listeners(&self) -> Vec<(String, String, u16)> {
        self.advertised.clone()
    }

    #[getter]
    fn running(&self) -> bool {
        self.inner.lock().map(|b| b.is_some()).unwrap_or(false)
    }

    /// Run a cleaner pass now over `topic` (every topic when `None`): (topic, partition,
    /// stats) for each partition. `force` cleans whatever is cleanable, whatever the dirty
    /// ratio, after rolling the active segment of compacted partitions.
    #[pyo3(signature = (topic=None, force=false))]
    fn compact(
        &self,
        py: Python<'_>,
        topic: Option<String>,
        force: bool,
    ) -> PyResult<Vec<(String, i32, CompactionStats)>> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("broker lock poisoned"))?;
        let Some(broker) = guard.as_ref() else {
            return Err(PyRuntimeError::new_err("the broker is stopped"));
        };
        let done = py.detach(|| broker.compact(topic.as_deref(), force));
        Ok(done
            .into_iter()
            .map(|c| (c.topic, c.partition, c.stats.into()))
            .collect())
    }

    /// Stop serving and close every log cleanly. Idempotent.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let broker = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("broker lock poisoned"))?
            .take();
        if let Some(mut broker) = broker {
            py.detach(|| broker.shutdown())
                .map_err(|e| PyOSError::new_err(format!("{e:#}")))?;
        }
        Ok(())
    }
}

/// A log dir held by another broker raises `LogDirInUseError` (a KafkaStorageError that is
/// also an OSError); every other start failure (a port in use, a dir not writable) stays
/// the OSError it always was.
fn start_error(e: anyhow::Error) -> PyErr {
    let text = format!("{e:#}");
    match e.downcast::<kafkalite_core::Error>() {
        Ok(in_use @ kafkalite_core::Error::LogDirInUse { .. }) => CoreError(in_use).into(),
        _ => PyOSError::new_err(text),
    }
}
