//! A broker's settings, checked against the schema: each known key's value as stored, the
//! schema default for the rest, and the warnings for keys the schema does not know (Kafka
//! ignores those and logs "The configuration 'x' was supplied but isn't a known config.").

use std::collections::BTreeMap;

use super::error::ConfigError;
use super::keys::{
    broker_key, broker_synonyms, check_broker, default_value, to_topic_unit, topic_key,
};
use super::schema::{ConfigKey, Default, Type};
use super::value::list_items;

/// Prefix of Kafka's per-listener overrides (`listener.name.internal.ssl.keystore.location`);
/// their suffix is a key of its own, so they are known.
const LISTENER_PREFIX: &str = "listener.name.";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerSettings {
    /// Known keys as given, after checking (trimmed, booleans in lower case).
    values: BTreeMap<String, String>,
    /// One line per key the schema does not know.
    pub warnings: Vec<String>,
}

impl std::default::Default for BrokerSettings {
    fn default() -> Self {
        BrokerSettings::validate(&BTreeMap::new()).expect("no keys, nothing to reject")
    }
}

fn schema_key(name: &str) -> &'static ConfigKey {
    broker_key(name).unwrap_or_else(|| panic!("{name} is not a broker key in the schema"))
}

impl BrokerSettings {
    /// Check every key; the first bad value is an error naming its key and value.
    pub fn validate(pairs: &BTreeMap<String, String>) -> Result<BrokerSettings, ConfigError> {
        let mut values = BTreeMap::new();
        let mut warnings = Vec::new();
        for (name, value) in pairs {
            match broker_key(name) {
                Some(key) => {
                    values.insert(name.clone(), check_broker(key, value)?);
                }
                None if name.starts_with(LISTENER_PREFIX) => {}
                None => warnings.push(format!(
                    "The configuration '{name}' was supplied but isn't a known config."
                )),
            }
        }
        let settings = BrokerSettings { values, warnings };
        settings.check_across_keys()?;
        Ok(settings)
    }

    /// Rules that involve two keys.
    fn check_across_keys(&self) -> Result<(), ConfigError> {
        if let (Some(node), Some(broker)) =
            (self.values.get("node.id"), self.values.get("broker.id"))
        {
            if node != broker {
                return Err(ConfigError::new("broker.id", broker, "must equal node.id"));
            }
        }
        let (min, max) = (
            self.int("group.min.session.timeout.ms"),
            self.int("group.max.session.timeout.ms"),
        );
        if min > max {
            return Err(ConfigError::new(
                "group.min.session.timeout.ms",
                &min.to_string(),
                format!("must not exceed group.max.session.timeout.ms ({max})"),
            ));
        }
        super::group_rules::check(|k| self.int(k), &self.list("group.consumer.assignors"))?;
        super::server_rules::check(|k| self.number(k), |k| self.list(k))
    }

    /// Whether the key was given (not defaulted).
    #[must_use]
    pub fn is_set(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The value as given, else the schema default; `None` where Kafka's default is null.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<String> {
        if let Some(v) = self.values.get(name) {
            return Some(v.clone());
        }
        let key = schema_key(name);
        match key.default {
            Default::SameAs(other) => self.get(other),
            _ => default_value(key),
        }
    }

    fn number(&self, name: &str) -> i64 {
        let key = schema_key(name);
        assert!(
            matches!(key.ty, Type::Int | Type::Short | Type::Long),
            "{name} is not an integer key"
        );
        self.get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} has no default; check is_set first"))
    }

    /// An INT key's value (checked to fit when validated).
    #[must_use]
    pub fn int(&self, name: &str) -> i32 {
        i32::try_from(self.number(name)).expect("INT keys are checked to fit")
    }

    /// A LONG key's value.
    #[must_use]
    pub fn long(&self, name: &str) -> i64 {
        self.number(name)
    }

    /// A BOOLEAN key's value.
    #[must_use]
    pub fn boolean(&self, name: &str) -> bool {
        assert_eq!(
            schema_key(name).ty,
            Type::Boolean,
            "{name} is not a boolean key"
        );
        self.get(name).as_deref() == Some("true")
    }

    /// A list key's items.
    #[must_use]
    pub fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| list_items(&v).into_iter().map(String::from).collect())
            .unwrap_or_default()
    }

    /// A topic key's broker-wide value when one of its broker synonyms is given: the most
    /// specific one wins, in the topic key's unit, with the broker key that set it.
    #[must_use]
    pub fn topic_value(&self, topic: &str) -> Option<(String, &'static ConfigKey)> {
        broker_synonyms(topic).into_iter().find_map(|b| {
            let v = self.values.get(b.name)?;
            Some((to_topic_unit(b, v).expect("checked when validated"), b))
        })
    }

    /// A topic key's broker-wide default: from a given broker synonym, else the schema's.
    #[must_use]
    pub fn topic_default(&self, topic: &str) -> Option<String> {
        self.topic_value(topic)
            .map(|(v, _)| v)
            .or_else(|| topic_key(topic).and_then(default_value))
    }
}
