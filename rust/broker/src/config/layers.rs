//! The two layers of dynamic broker configs over `server.properties` (this broker's own and
//! the cluster-wide default, `config::dynamic`), and the schema key a dynamic name stands
//! for.

use std::collections::BTreeMap;

use kafkalite_core::config::{self as schema, ConfigKey};
use serde::{Deserialize, Serialize};

use super::source;

pub(super) const LISTENER_PREFIX: &str = "listener.name.";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicLayers {
    /// This broker's own dynamic configs.
    #[serde(default)]
    pub broker: BTreeMap<String, String>,
    /// The cluster-wide defaults.
    #[serde(default)]
    pub default: BTreeMap<String, String>,
}

impl DynamicLayers {
    /// `raw` (server.properties) overlaid with the default layer, then this broker's.
    #[must_use]
    pub fn merged(&self, raw: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut out = raw.clone();
        out.extend(self.default.clone());
        out.extend(self.broker.clone());
        out
    }

    /// The dynamic value of `key` and its DescribeConfigs source, if a layer has it.
    #[must_use]
    pub fn lookup(&self, key: &str) -> Option<(String, i8)> {
        if let Some(v) = self.broker.get(key) {
            return Some((v.clone(), source::DYNAMIC_BROKER_CONFIG));
        }
        self.default
            .get(key)
            .map(|v| (v.clone(), source::DYNAMIC_DEFAULT_BROKER_CONFIG))
    }

    /// Every key with a value, most specific layer first (for synonyms lists).
    #[must_use]
    pub fn sources(&self, key: &str) -> Vec<(String, i8)> {
        let mut out = Vec::new();
        if let Some(v) = self.broker.get(key) {
            out.push((v.clone(), source::DYNAMIC_BROKER_CONFIG));
        }
        if let Some(v) = self.default.get(key) {
            out.push((v.clone(), source::DYNAMIC_DEFAULT_BROKER_CONFIG));
        }
        out
    }
}

/// The schema key behind a dynamic key's name: itself, or the suffix of a per-listener
/// `listener.name.<l>.<key>` or `listener.name.<l>.<mechanism>.<key>`; and whether it was
/// listener-prefixed.
#[must_use]
pub fn base_key(name: &str) -> Option<(&'static ConfigKey, bool)> {
    let Some(rest) = name.strip_prefix(LISTENER_PREFIX) else {
        return schema::broker_key(name).map(|k| (k, false));
    };
    let (_listener, key) = rest.split_once('.')?;
    if let Some(k) = schema::broker_key(key) {
        return Some((k, true));
    }
    // A SASL key for one mechanism: `plain.sasl.jaas.config`, `scram-sha-256.sasl...`,
    // `oauthbearer.connections.max.reauth.ms`.
    let (_mechanism, key) = key.split_once('.')?;
    schema::broker_key(key)
        .filter(|k| is_security(k))
        .map(|k| (k, true))
}

/// A listener's TLS or SASL key (re-authentication is one, as in Kafka's listener
/// mechanism configs).
pub(super) fn is_security(key: &ConfigKey) -> bool {
    key.name.starts_with("ssl.")
        || key.name.starts_with("sasl.")
        || key.name == "connections.max.reauth.ms"
}
