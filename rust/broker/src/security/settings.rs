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
    /// Set when `raw` holds a JAAS entry's options: keys come from them or the schema's
    /// defaults, never from the broker's or a listener's values.
    jaas_mechanism: Option<String>,
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
            jaas_mechanism: None,
        }
    }

    /// Keys given as options of `mechanism`'s JAAS entry, as Kafka reads the `ssl.*` of
    /// an OAUTHBEARER JWKS client there: an option's value, else the schema's default.
    #[must_use]
    pub fn jaas_options(
        &self,
        mechanism: &str,
        options: &'a BTreeMap<String, String>,
    ) -> ListenerKeys<'a> {
        ListenerKeys {
            raw: options,
            settings: self.settings,
            prefix: String::new(),
            jaas_mechanism: Some(mechanism.to_string()),
        }
    }

    /// The listener's value of `key` (trimmed), else the broker's, else the default.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<String> {
        if self.jaas_mechanism.is_some() {
            return self
                .raw
                .get(key)
                .map(|v| v.trim().to_string())
                .or_else(|| broker_key(key).and_then(kafkalite_core::config::default_value));
        }
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

    /// A refused setting, worded for `typed_config_error` (`invalid config KEY=VALUE:
    /// REASON`): the key a value came from and the value as Kafka shows one (a password
    /// `[hidden]`, an unset key `null`).
    pub fn refused(&self, key: &str, reason: impl std::fmt::Display) -> anyhow::Error {
        let value = if key.ends_with(".password") {
            "[hidden]".to_string()
        } else {
            self.get(key).unwrap_or_else(|| "null".into())
        };
        anyhow::anyhow!("invalid config {}={value}: {reason}", self.source_of(key))
    }

    /// The name of the key a value came from, for error messages.
    #[must_use]
    pub fn source_of(&self, key: &str) -> String {
        if let Some(mechanism) = &self.jaas_mechanism {
            return format!("{key} (an option of the {mechanism} sasl.jaas.config)");
        }
        let prefixed = format!("{}{key}", self.prefix);
        if self.raw.contains_key(&prefixed) {
            prefixed
        } else {
            key.to_string()
        }
    }
}
