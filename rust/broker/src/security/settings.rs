//! Reading a security key for one listener, as Kafka does: `listener.name.<listener>.<key>`
//! (listener name in lower case) first, then the broker-wide `<key>`, then the schema's
//! default. SASL keys may also be per mechanism:
//! `listener.name.<listener>.<mechanism>.<key>`.

use std::collections::BTreeMap;

use kafkalite_core::config::{broker_key, BrokerSettings};

pub struct ListenerKeys<'a> {
    raw: &'a BTreeMap<String, String>,
    settings: &'a BrokerSettings,
    prefix: String,
}

impl<'a> ListenerKeys<'a> {
    #[must_use]
    pub fn new(
        raw: &'a BTreeMap<String, String>,
        settings: &'a BrokerSettings,
        listener: &str,
    ) -> ListenerKeys<'a> {
        ListenerKeys {
            raw,
            settings,
            prefix: format!("listener.name.{}.", listener.to_lowercase()),
        }
    }

    /// The listener's value of `key` (trimmed), else the broker's, else the default.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<String> {
        if let Some(v) = self.raw.get(&format!("{}{key}", self.prefix)) {
            return Some(v.trim().to_string());
        }
        if broker_key(key).is_some() {
            return self.settings.get(key).map(|v| v.trim().to_string());
        }
        self.raw.get(key).map(|v| v.trim().to_string())
    }

    /// A SASL key for `mechanism`: the mechanism-and-listener-prefixed one first.
    #[must_use]
    pub fn get_for_mechanism(&self, mechanism: &str, key: &str) -> Option<String> {
        let name = format!("{}{}.{key}", self.prefix, mechanism.to_lowercase());
        self.raw
            .get(&name)
            .map(|v| v.trim().to_string())
            .or_else(|| self.get(key))
    }

    /// The name of the key a value came from, for error messages.
    #[must_use]
    pub fn source_of(&self, key: &str) -> String {
        let prefixed = format!("{}{key}", self.prefix);
        if self.raw.contains_key(&prefixed) {
            prefixed
        } else {
            key.to_string()
        }
    }
}
