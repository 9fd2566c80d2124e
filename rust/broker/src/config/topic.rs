//! Topic-level configs as the broker serves them: validation of a topic's overrides
//! (CreateTopics, AlterConfigs), and each key's effective value, source and synonyms
//! (DescribeConfigs). The keys themselves, their defaults and bounds are the core's schema.
//!
//! The core's `LogConfig::set` ignores keys outside the schema; this rejects them by name,
//! as Kafka rejects unknown topic keys.

use std::collections::BTreeMap;

use kafkalite_core::config::{self as schema, ConfigKey};

use crate::config::live::LiveConfig;
use crate::config::source;
use crate::errors::{codes, ApiError};

#[must_use]
pub fn find(name: &str) -> Option<&'static ConfigKey> {
    schema::topic_key(name)
}

/// Check one topic key and value and return the value as stored (trimmed; booleans in
/// lower case, as Kafka parses them case-insensitively). Unknown keys are rejected by name.
pub fn normalize(name: &str, value: &str) -> Result<String, ApiError> {
    let k = find(name).ok_or_else(|| {
        ApiError::new(
            codes::INVALID_CONFIG,
            format!("Unknown topic config name: {name}"),
        )
    })?;
    schema::normalize(k, value).map_err(|why| {
        ApiError::new(
            codes::INVALID_CONFIG,
            format!("Invalid value {value} for configuration {name}: {why}"),
        )
    })
}

/// Validate and normalize a topic's whole override set, including the checks across keys
/// Kafka makes (against the broker defaults for keys the overrides leave out).
pub fn normalize_all(
    live: &LiveConfig,
    overrides: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ApiError> {
    let out = overrides
        .iter()
        .map(|(k, v)| normalize(k, v).map(|v| (k.clone(), v)))
        .collect::<Result<BTreeMap<_, _>, _>>()?;
    let lag = |name: &str| -> i64 {
        out.get(name)
            .cloned()
            .or_else(|| find(name).map(|k| broker_default(live, k).0))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (min, max) = (lag("min.compaction.lag.ms"), lag("max.compaction.lag.ms"));
    if min > max {
        return Err(ApiError::new(
            codes::INVALID_CONFIG,
            format!(
                "conflict topic config setting min.compaction.lag.ms ({min}) > \
                 max.compaction.lag.ms ({max})"
            ),
        ));
    }
    Ok(out)
}

/// One step of where a value comes from, as DescribeConfigs synonyms list them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: String,
    pub source: i8,
}

/// A topic key's effective value, its source, and the synonyms beneath it (most specific
/// first, the key's own override included).
#[derive(Clone, Debug)]
pub struct Effective {
    pub key: &'static ConfigKey,
    pub value: String,
    pub source: i8,
    pub synonyms: Vec<Synonym>,
}

/// The broker keys that set this topic key's default, as given in each dynamic layer, in
/// server.properties, and their schema default (in the broker key's unit): most specific
/// key first, then most specific layer, as Kafka's `ConfigHelper` lists them.
fn broker_synonym_values(live: &LiveConfig, key: &ConfigKey) -> Vec<Synonym> {
    let mut out = Vec::new();
    for b in schema::broker_synonyms(key.name) {
        for (value, source) in live.layers.sources(b.name) {
            out.push(Synonym {
                name: b.name.to_string(),
                value,
                source,
            });
        }
        if let Some(v) = live.static_raw.get(b.name) {
            out.push(Synonym {
                name: b.name.to_string(),
                value: v.clone(),
                source: source::STATIC_BROKER_CONFIG,
            });
        }
        if let Some(value) = schema::default_value(b) {
            out.push(Synonym {
                name: b.name.to_string(),
                value,
                source: source::DEFAULT_CONFIG,
            });
        }
    }
    out
}

/// The broker-level default of a topic key and its source: the layer (dynamic per broker,
/// dynamic cluster default, server.properties) of the most specific broker key that sets
/// it, else the schema default. It is the value the live log defaults hold, so what
/// DescribeConfigs shows is what the logs do.
#[must_use]
pub fn broker_default(live: &LiveConfig, key: &ConfigKey) -> (String, i8) {
    let value = live.settings.topic_default(key.name).unwrap_or_default();
    let source = match live.settings.topic_value(key.name) {
        Some((_, from)) => live
            .layers
            .lookup(from.name)
            .map_or(source::STATIC_BROKER_CONFIG, |(_, s)| s),
        None => source::DEFAULT_CONFIG,
    };
    (value, source)
}

/// Every topic key with its effective value, source and synonyms.
#[must_use]
pub fn effective(live: &LiveConfig, overrides: &BTreeMap<String, String>) -> Vec<Effective> {
    schema::TOPIC_KEYS
        .iter()
        .map(|k| {
            let (default, default_source) = broker_default(live, k);
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(k.name) {
                synonyms.push(Synonym {
                    name: k.name.to_string(),
                    value: v.clone(),
                    source: source::DYNAMIC_TOPIC_CONFIG,
                });
            }
            synonyms.extend(broker_synonym_values(live, k));
            let (value, source) = match overrides.get(k.name) {
                Some(v) => (v.clone(), source::DYNAMIC_TOPIC_CONFIG),
                None => (default, default_source),
            };
            Effective {
                key: k,
                value,
                source,
                synonyms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::layers::DynamicLayers;

    fn live(raw: &BTreeMap<String, String>, layers: DynamicLayers) -> LiveConfig {
        LiveConfig::derive(raw, &layers).unwrap()
    }

    #[test]
    fn normalizes_and_rejects() {
        assert_eq!(normalize("preallocate", " TRUE ").unwrap(), "true");
        assert_eq!(
            normalize("cleanup.policy", "compact, delete").unwrap(),
            "compact,delete"
        );
        assert_eq!(
            normalize("leader.replication.throttled.replicas", "0:1, 1:1").unwrap(),
            "0:1,1:1"
        );
        for (k, v) in [
            ("retention.ms", "-2"),
            ("retention.bytes", "-2"),
            ("segment.bytes", "4294967296"),
            ("cleanup.policy", "shred"),
            ("cleanup.policy", ""),
            ("compression.type", "brotli"),
            ("min.cleanable.dirty.ratio", "2"),
            ("min.insync.replicas", "0"),
            ("remote.storage.enable", "true"),
            ("preallocate", "yes"),
            ("compression.zstd.level", "23"),
        ] {
            let e = normalize(k, v).unwrap_err();
            assert_eq!(e.code, codes::INVALID_CONFIG);
            assert!(e.message.contains(k) && e.message.contains(v), "{e:?}");
        }
        let e = normalize("no.such.key", "1").unwrap_err();
        assert!(e.message.contains("no.such.key"), "{e:?}");
    }

    #[test]
    fn compaction_lags_must_not_cross() {
        let config = live(&BTreeMap::new(), DynamicLayers::default());
        let overrides = BTreeMap::from([
            ("min.compaction.lag.ms".to_string(), "100".to_string()),
            ("max.compaction.lag.ms".to_string(), "10".to_string()),
        ]);
        assert!(normalize_all(&config, &overrides).is_err());
    }

    #[test]
    fn sources_follow_server_properties() {
        let raw = BTreeMap::from([("log.retention.hours".to_string(), "1".to_string())]);
        let config = live(&raw, DynamicLayers::default());
        let overrides = BTreeMap::from([("segment.ms".to_string(), "1000".to_string())]);
        let all = effective(&config, &overrides);
        let get = |n: &str| all.iter().find(|e| e.key.name == n).unwrap();
        let retention = get("retention.ms");
        assert_eq!(retention.value, "3600000");
        assert_eq!(retention.source, source::STATIC_BROKER_CONFIG);
        assert_eq!(retention.synonyms[0].name, "log.retention.hours");
        let segment = get("segment.ms");
        assert_eq!(
            (segment.value.as_str(), segment.source),
            ("1000", source::DYNAMIC_TOPIC_CONFIG)
        );
        assert_eq!(segment.synonyms.len(), 2);
        let policy = get("cleanup.policy");
        assert_eq!(
            (policy.value.as_str(), policy.source),
            ("delete", source::DEFAULT_CONFIG)
        );
    }

    #[test]
    fn dynamic_defaults_report_their_layer() {
        let raw = BTreeMap::from([("log.retention.hours".to_string(), "1".to_string())]);
        let layers = DynamicLayers {
            broker: BTreeMap::from([("log.segment.bytes".to_string(), "4096".to_string())]),
            default: BTreeMap::from([("log.retention.ms".to_string(), "1000".to_string())]),
        };
        let all = effective(&live(&raw, layers), &BTreeMap::new());
        let get = |n: &str| all.iter().find(|e| e.key.name == n).unwrap();
        let retention = get("retention.ms");
        assert_eq!(
            (retention.value.as_str(), retention.source),
            ("1000", source::DYNAMIC_DEFAULT_BROKER_CONFIG)
        );
        let names: Vec<_> = retention
            .synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.source))
            .collect();
        assert_eq!(
            names,
            [
                ("log.retention.ms", source::DYNAMIC_DEFAULT_BROKER_CONFIG),
                ("log.retention.hours", source::STATIC_BROKER_CONFIG),
                ("log.retention.hours", source::DEFAULT_CONFIG),
            ]
        );
        let segment = get("segment.bytes");
        assert_eq!(
            (segment.value.as_str(), segment.source),
            ("4096", source::DYNAMIC_BROKER_CONFIG)
        );
    }
}
