//! The config schema for Python: `server.properties` is parsed in Python and checked here,
//! against the same schema the broker reads.

use std::collections::{BTreeMap, HashMap};

use kafkalite_broker::BrokerConfig;
use kafkalite_core::config::{self, BrokerSettings};
use pyo3::prelude::*;

use kafkalite_core::error_codes as codes;

use crate::errors::kafka_error;

/// Check broker keys and values as the broker will read them (the schema, then listeners
/// and the security protocol map); return one warning per key the schema does not know.
/// Raises InvalidConfigError naming the key and value of the first bad value.
#[pyfunction]
pub fn validate_broker_config(config: HashMap<String, String>) -> PyResult<Vec<String>> {
    let pairs: BTreeMap<String, String> = config.into_iter().collect();
    BrokerConfig::from_pairs(&pairs)
        .map(|c| c.settings.warnings)
        .map_err(|e| kafka_error(codes::INVALID_CONFIG, e.to_string()))
}

/// A broker key's default as the schema has it; None where Kafka's is null. Raises
/// KeyError for a key the schema does not know.
#[pyfunction]
pub fn broker_config_default(name: &str) -> PyResult<Option<String>> {
    let key = config::broker_key(name)
        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(name.to_string()))?;
    Ok(BrokerSettings::default().get(key.name))
}

/// Whether a broker key's value is a secret (a PASSWORD key, listener-prefixed or not):
/// never shown, encrypted in ZooKeeper.
#[pyfunction]
pub fn broker_config_is_sensitive(name: &str) -> bool {
    kafkalite_broker::config::dynamic::is_sensitive(name)
}

/// Check a dynamic broker config as AlterConfigs would (`per_broker`: for one broker,
/// else the cluster default); the value as stored. Raises InvalidConfigError naming the key.
#[pyfunction]
pub fn check_dynamic_broker_config(name: &str, value: &str, per_broker: bool) -> PyResult<String> {
    // The broker answers a refusal INVALID_REQUEST (as Kafka); to this caller it is a bad
    // config value.
    kafkalite_broker::config::dynamic::check(name, value, per_broker)
        .map_err(|e| kafka_error(kafkalite_core::error_codes::INVALID_CONFIG, e.message))
}
