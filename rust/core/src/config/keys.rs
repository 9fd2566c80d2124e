//! Looking keys up in the schema's tables, and what follows from a key's entry: its
//! default, its topic synonyms and units, the check of a broker value, its sensitivity.

use super::broker_keys::BROKER_KEYS;
use super::error::ConfigError;
use super::schema::{ConfigKey, Default};
use super::topic_keys::TOPIC_KEYS;
use super::value::{normalize, Reason};

fn find(table: &'static [ConfigKey], name: &str) -> Option<&'static ConfigKey> {
    // The tables are sorted by name (a unit test holds them to it).
    table
        .binary_search_by(|k| k.name.cmp(name))
        .ok()
        .map(|i| &table[i])
}

#[must_use]
pub fn broker_key(name: &str) -> Option<&'static ConfigKey> {
    find(BROKER_KEYS, name)
}

#[must_use]
pub fn topic_key(name: &str) -> Option<&'static ConfigKey> {
    find(TOPIC_KEYS, name)
}

/// Broker keys that set a topic key's default, most specific first (`log.retention.ms`,
/// then `.minutes`, then `.hours`), as Kafka lists synonyms.
#[must_use]
pub fn broker_synonyms(topic: &str) -> Vec<&'static ConfigKey> {
    let mut keys: Vec<_> = BROKER_KEYS
        .iter()
        .filter(|k| k.synonym.is_some_and(|s| s.topic == topic))
        .collect();
    keys.sort_by_key(|k| k.synonym.map_or(1, |s| s.unit));
    keys
}

/// A broker value in its topic key's unit: `log.retention.hours=2` is `retention.ms=7200000`.
/// -1 ("no limit") stays -1 whatever the unit.
pub fn to_topic_unit(broker: &ConfigKey, value: &str) -> Result<String, Reason> {
    let unit = broker.synonym.map_or(1, |s| s.unit);
    if unit == 1 {
        return Ok(value.to_string());
    }
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| "not an integer".to_string())?;
    if n == -1 {
        return Ok("-1".into());
    }
    n.checked_mul(unit)
        .map(|ms| ms.to_string())
        .ok_or_else(|| "too large".to_string())
}

/// A key's schema default as text; `None` where Kafka's default is null.
#[must_use]
pub fn default_value(key: &ConfigKey) -> Option<String> {
    match key.default {
        Default::None => None,
        Default::Value(v) => Some(v.to_string()),
        Default::SameAs(other) => broker_key(other).and_then(default_value),
        Default::FromBroker => broker_synonyms(key.name).into_iter().find_map(|b| {
            default_value(b).map(|v| to_topic_unit(b, &v).expect("schema defaults scale"))
        }),
    }
}

/// Check a broker key's value: its own type and validator, then, for a topic synonym, the
/// topic key's validator on the value in the topic's unit. Returns the value as stored.
pub fn check_broker(key: &ConfigKey, value: &str) -> Result<String, ConfigError> {
    let bad = |reason: Reason| ConfigError::new(key.name, value, reason);
    let stored = normalize(key, value).map_err(bad)?;
    if let Some(synonym) = key.synonym {
        let topic = topic_key(synonym.topic).expect("synonyms name topic keys");
        let scaled = to_topic_unit(key, &stored).map_err(bad)?;
        normalize(topic, &scaled).map_err(|reason| {
            if synonym.unit == 1 {
                bad(reason)
            } else {
                bad(format!("{reason} (as {}={scaled})", topic.name))
            }
        })?;
    }
    Ok(stored)
}

/// Kafka's `PASSWORD` keys, and for keys outside the schema (listener-prefixed security
/// settings) anything whose name says it holds a secret: their values are never echoed.
#[must_use]
pub fn is_sensitive(name: &str) -> bool {
    match broker_key(name) {
        Some(k) => k.sensitive(),
        None => {
            name.contains("password")
                || name.contains("secret")
                || name.ends_with("jaas.config")
                || name.ends_with("keystore.key")
        }
    }
}
