//! `BrokerServer`: the wire-protocol broker running on its own tokio threads inside this
//! process. Python starts and stops it; requests never enter Python.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafkalite_broker::state::BrokerState;
use kafkalite_broker::{Broker, BrokerConfig};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;

use crate::cluster::{BrokerTuple, TopicTuple};
use crate::errors::{kafka_error, CoreError};
use crate::partition_log::CompactionStats;
use kafkalite_core::error_codes as codes;

#[pyclass(module = "kafkalite._core", frozen)]
pub struct BrokerServer {
    inner: Mutex<Option<Broker>>,
    addresses: Vec<(String, String, u16)>,
    advertised: Vec<(String, String, u16)>,
    metrics: Option<(String, u16)>,
}

#[pymethods]
impl BrokerServer {
    /// Validate `config` (Kafka's broker keys, string values), open the logs, bind the
    /// listeners and start serving.
    #[new]
    /// `dynamic_configs` (cluster mode): the dynamic broker configs ZooKeeper holds, as
    /// JSON `{"broker": {...}, "default": {...}}`, secrets decrypted.
    #[pyo3(signature = (config, worker_threads=2, dynamic_configs=None))]
    fn new(
        py: Python<'_>,
        config: HashMap<String, String>,
        worker_threads: usize,
        dynamic_configs: Option<String>,
    ) -> PyResult<Self> {
        let pairs: BTreeMap<String, String> = config.into_iter().collect();
        let mut config = BrokerConfig::from_pairs(&pairs)
            .map_err(|e| kafka_error(codes::INVALID_CONFIG, e.to_string()))?;
        if let Some(text) = dynamic_configs {
            config.dynamic_at_start = serde_json::from_str(&text)
                .map_err(|e| kafka_error(codes::INVALID_CONFIG, format!("dynamic_configs: {e}")))?;
        }
        let broker = py
            .detach(|| Broker::start(config, worker_threads))
            .map_err(start_error)?;
        let addresses: Vec<(String, String, u16)> = broker
            .addresses()
            .iter()
            .map(|(name, addr)| (name.clone(), addr.ip().to_string(), addr.port()))
            .collect();
        let advertised = broker.advertised_listeners();
        let metrics = broker
            .metrics_address()
            .map(|a| (a.ip().to_string(), a.port()));
        Ok(BrokerServer {
            inner: Mutex::new(Some(broker)),
            addresses,
            advertised,
            metrics,
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

    /// (host, port) of the Prometheus endpoint (`metrics.listen`), if one is served.
    #[getter]
    fn metrics_address(&self) -> Option<(String, u16)> {
        self.metrics.clone()
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

    /// The listener brokers reach each other on (`inter.broker.listener.name`, else the one
    /// named after `security.inter.broker.protocol`, else the first) and its security
    /// protocol, as registered in ZooKeeper.
    #[getter]
    fn inter_broker_listener(&self) -> PyResult<Option<String>> {
        Ok(kafkalite_broker::replication::inter_broker::listener_name(
            &self.state()?.config,
        ))
    }

    /// (listener name, security protocol) of every listener.
    #[getter]
    fn listener_security_protocols(&self) -> PyResult<Vec<(String, String)>> {
        Ok(self
            .state()?
            .config
            .listeners
            .iter()
            .map(|l| (l.name.clone(), l.security_protocol.name().to_string()))
            .collect())
    }

    /// Cluster mode: make this broker's topics, partitions, leaders and live brokers what
    /// the controller decided. `brokers`: (id, host, port, rack, [(listener, host,
    /// port)]); `topics`: (name, 16-byte
    /// id, config overrides, [(partition, leader, leader_epoch, replicas, isr)]). Topics
    /// missing from `topics` are deleted here, data included.
    fn apply_metadata(
        &self,
        py: Python<'_>,
        cluster_id: String,
        controller_id: i32,
        brokers: Vec<BrokerTuple>,
        topics: Vec<TopicTuple>,
    ) -> PyResult<()> {
        let snapshot = crate::cluster::snapshot(cluster_id, controller_id, brokers, topics)?;
        let state = self.state()?;
        py.detach(|| state.apply_snapshot(snapshot))
            .map_err(|e| kafka_error(e.code, e.message))
    }

    /// Cluster mode: make this broker's SCRAM credentials, ACLs and dynamic configs what
    /// ZooKeeper holds: JSON `{"dynamic": {"broker": {...}, "default": {...}}, "users":
    /// {user: {mechanism: credential}}, "acls": [binding, ...]}`, secrets decrypted.
    fn apply_shared_security(&self, py: Python<'_>, state_json: String) -> PyResult<()> {
        let shared: kafkalite_broker::security::shared_store::SharedSecurity =
            serde_json::from_str(&state_json).map_err(|e| {
                kafka_error(
                    codes::INVALID_REQUEST,
                    format!("shared security state: {e}"),
                )
            })?;
        let state = self.state()?;
        py.detach(|| kafkalite_broker::security::shared_store::apply(&state, shared));
        Ok(())
    }

    /// Cluster mode: make this broker's client quotas those ZooKeeper holds.
    /// `quotas_json`: `[{"entity": [[type, name or null], ...], "quotas": {key: value}}]`.
    fn apply_client_quotas(&self, quotas_json: &str) -> PyResult<()> {
        let stored: Vec<kafkalite_broker::security::quotas::store::StoredEntity> =
            serde_json::from_str(quotas_json)
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("quotas: {e}")))?;
        self.state()?.security.quotas.store.replace_all(stored);
        Ok(())
    }

    /// Cluster mode: make this broker's client-metrics subscriptions those ZooKeeper
    /// holds. `subscriptions_json`: `{name: {key: value}}`.
    fn apply_client_metrics(&self, subscriptions_json: &str) -> PyResult<()> {
        let all: kafkalite_broker::config::client_metrics_store::Subscriptions =
            serde_json::from_str(subscriptions_json).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("client metrics: {e}"))
            })?;
        self.state()?.client_metrics.replace_all(all);
        Ok(())
    }

    /// Cluster mode: make this broker's group configs those ZooKeeper holds.
    /// `groups_json`: `{group: {key: value}}`.
    fn apply_group_configs(&self, groups_json: &str) -> PyResult<()> {
        let all: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> =
            serde_json::from_str(groups_json).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!("group configs: {e}"))
            })?;
        self.state()?.group_configs.replace_all(all);
        Ok(())
    }

    /// Cluster mode: the next metadata-changing admin request a client sent this broker,
    /// as (id, {"op": ..., ...}), or None after `timeout_ms` without one.
    fn next_admin_request<'py>(
        &self,
        py: Python<'py>,
        timeout_ms: u64,
    ) -> PyResult<Option<(u64, Bound<'py, pyo3::types::PyDict>)>> {
        let state = self.state()?;
        let Some(link) = state.cluster.as_ref() else {
            return Err(PyRuntimeError::new_err(
                "not in cluster mode (zookeeper.connect is not set)",
            ));
        };
        let next = py.detach(|| link.admin.next(Duration::from_millis(timeout_ms)));
        next.map(|(id, op)| Ok((id, crate::cluster::op_dict(py, op)?)))
            .transpose()
    }

    /// Answer admin request `id` (error_code 0: done). False when its client stopped
    /// waiting.
    fn complete_admin_request(
        &self,
        py: Python<'_>,
        id: u64,
        error_code: i16,
        message: String,
    ) -> PyResult<bool> {
        let state = self.state()?;
        // Without the GIL: an answer may take partition locks whose holders log to Python.
        Ok(py.detach(|| {
            state
                .cluster
                .as_ref()
                .is_some_and(|link| link.admin.complete(id, error_code, message))
        }))
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

impl BrokerServer {
    fn state(&self) -> PyResult<Arc<BrokerState>> {
        let guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("broker lock poisoned"))?;
        guard
            .as_ref()
            .map(|b| Arc::clone(b.state()))
            .ok_or_else(|| PyRuntimeError::new_err("the broker is stopped"))
    }
}

/// A log dir held by another broker raises `LogDirInUseError` (a KafkaStorageError that is
/// also an OSError); every other start failure (a port in use, a dir not writable) stays
/// the OSError it always was.
fn start_error(e: anyhow::Error) -> PyErr {
    let text = format!("{e:#}");
    match e.downcast::<kafkalite_core::Error>() {
        Ok(in_use @ kafkalite_core::Error::LogDirInUse { .. }) => CoreError(in_use).into(),
        // A security setting that cannot be used (a missing keystore, an unknown
        // mechanism): InvalidConfigError, like every other bad value.
        Ok(bad @ kafkalite_core::Error::InvalidConfig { .. }) => CoreError(bad).into(),
        _ => PyOSError::new_err(text),
    }
}
