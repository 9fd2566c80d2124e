//! `BrokerServer`: the wire-protocol broker running on its own tokio threads inside this
//! process. Python starts and stops it; requests never enter Python.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use kafkalite_broker::{Broker, BrokerConfig};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

use crate::errors::InvalidConfigError;

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
            .map_err(|e| InvalidConfigError::new_err(e.to_string()))?;
        let broker = py
            .detach(|| Broker::start(config, worker_threads))
            .map_err(|e| PyOSError::new_err(format!("{e:#}")))?;
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
