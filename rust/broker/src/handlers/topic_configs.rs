//! What the broker knows about topic-level config keys: type, Kafka default, the broker
//! keys that set the default, validation, and where an effective value came from.
//!
//! The core's `LogConfig::set` ignores keys it does not use, so this table is the only
//! place that decides whether a key exists. Kafka rejects unknown topic keys; so do we.

use std::collections::BTreeMap;

use crate::config::BrokerConfig;
use crate::state::{codes, ApiError};

/// DescribeConfigs `config_source` values.
pub mod source {
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// DescribeConfigs `config_type` values (v3+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
}

/// What a value must satisfy, as Kafka's `ConfigDef` validators say.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    Any,
    AtLeast(i64),
    Between(i64, i64),
    Ratio,
    OneOf(&'static [&'static str]),
    /// A comma-separated list whose items are all from the set.
    ListOf(&'static [&'static str]),
    /// Throttled-replica lists: `*`, or `partition:broker` pairs.
    Replicas,
    /// A feature this broker does not have: only the off value is accepted.
    Unsupported(&'static str),
}

#[derive(Debug)]
pub struct TopicKey {
    pub name: &'static str,
    pub kind: Kind,
    /// Kafka's default, used when no broker key sets one.
    pub default: &'static str,
    /// Broker keys that set this key's default, most specific first (Kafka's synonyms).
    pub broker_keys: &'static [&'static str],
    pub check: Check,
}

const fn key(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    broker_keys: &'static [&'static str],
    check: Check,
) -> TopicKey {
    TopicKey {
        name,
        kind,
        default,
        broker_keys,
        check,
    }
}

const MAX: &str = "9223372036854775807";
const CLEANUP: &[&str] = &["delete", "compact"];
const CODECS: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

use Check::{Any, AtLeast, Between, ListOf, OneOf, Ratio, Replicas, Unsupported};
use Kind::{Boolean, Double, Int, List, Long, String as Str};

/// Kafka 3.9's topic keys (the 4.0 removals included, so 3.x clients setting them work).
#[rustfmt::skip]
pub const TOPIC_KEYS: &[TopicKey] = &[
    key("cleanup.policy", List, "delete", &["log.cleanup.policy"], ListOf(CLEANUP)),
    key("compression.gzip.level", Int, "-1", &["compression.gzip.level"], Between(-1, 9)),
    key("compression.lz4.level", Int, "9", &["compression.lz4.level"], Between(1, 17)),
    key("compression.type", Str, "producer", &["compression.type"], OneOf(CODECS)),
    key("compression.zstd.level", Int, "3", &["compression.zstd.level"], Between(-131_072, 22)),
    key("delete.retention.ms", Long, "86400000", &["log.cleaner.delete.retention.ms"], AtLeast(0)),
    key("file.delete.delay.ms", Long, "60000", &["log.segment.delete.delay.ms"], AtLeast(0)),
    key("flush.messages", Long, MAX, &["log.flush.interval.messages"], AtLeast(1)),
    key("flush.ms", Long, MAX, &["log.flush.interval.ms"], AtLeast(0)),
    key("follower.replication.throttled.replicas", List, "", &[], Replicas),
    key("index.interval.bytes", Int, "4096", &["log.index.interval.bytes"], AtLeast(0)),
    key("leader.replication.throttled.replicas", List, "", &[], Replicas),
    key("local.retention.bytes", Long, "-2", &["log.local.retention.bytes"], AtLeast(-2)),
    key("local.retention.ms", Long, "-2", &["log.local.retention.ms"], AtLeast(-2)),
    key("max.compaction.lag.ms", Long, MAX, &["log.cleaner.max.compaction.lag.ms"], AtLeast(1)),
    key("max.message.bytes", Int, "1048588", &["message.max.bytes"], AtLeast(0)),
    key("message.downconversion.enable", Boolean, "true", &["log.message.downconversion.enable"], Any),
    key("message.format.version", Str, "3.0-IV1", &["log.message.format.version"], Any),
    key("message.timestamp.after.max.ms", Long, MAX, &["log.message.timestamp.after.max.ms"], AtLeast(0)),
    key("message.timestamp.before.max.ms", Long, MAX, &["log.message.timestamp.before.max.ms"], AtLeast(0)),
    key("message.timestamp.difference.max.ms", Long, MAX, &["log.message.timestamp.difference.max.ms"], AtLeast(0)),
    key("message.timestamp.type", Str, "CreateTime", &["log.message.timestamp.type"], OneOf(TIMESTAMP_TYPES)),
    key("min.cleanable.dirty.ratio", Double, "0.5", &["log.cleaner.min.cleanable.ratio"], Ratio),
    key("min.compaction.lag.ms", Long, "0", &["log.cleaner.min.compaction.lag.ms"], AtLeast(0)),
    key("min.insync.replicas", Int, "1", &["min.insync.replicas"], AtLeast(1)),
    key("preallocate", Boolean, "false", &["log.preallocate"], Any),
    key("remote.storage.enable", Boolean, "false", &[], Unsupported("tiered storage is not available on this broker")),
    key("retention.bytes", Long, "-1", &["log.retention.bytes"], Any),
    key("retention.ms", Long, "604800000", &["log.retention.ms", "log.retention.minutes", "log.retention.hours"], AtLeast(-1)),
    // The storage layer needs room for at least one batch and one index entry.
    key("segment.bytes", Int, "1073741824", &["log.segment.bytes"], AtLeast(14)),
    key("segment.index.bytes", Int, "10485760", &["log.index.size.max.bytes"], AtLeast(8)),
    key("segment.jitter.ms", Long, "0", &["log.roll.jitter.ms", "log.roll.jitter.hours"], AtLeast(0)),
    key("segment.ms", Long, "604800000", &["log.roll.ms", "log.roll.hours"], AtLeast(1)),
    key("unclean.leader.election.enable", Boolean, "false", &["unclean.leader.election.enable"], Any),
];

#[must_use]
pub fn find(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.name == name)
}

fn invalid(key: &str, value: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        codes::INVALID_CONFIG,
        format!("invalid value {value:?} for configuration {key}: {why}"),
    )
}

fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Check one topic key and value and return the value as stored (trimmed; booleans in
/// lower case, as Kafka parses them case-insensitively). Unknown keys are rejected by name.
pub fn normalize(name: &str, value: &str) -> Result<String, ApiError> {
    let k = find(name).ok_or_else(|| {
        ApiError::new(
            codes::INVALID_CONFIG,
            format!("unknown topic config name: {name}"),
        )
    })?;
    let v = value.trim();
    let number = |lo: i64, hi: i64| -> Result<String, ApiError> {
        let n: i64 = v
            .parse()
            .map_err(|_| invalid(name, value, format!("expected {:?}", k.kind)))?;
        if k.kind == Int && i32::try_from(n).is_err() {
            return Err(invalid(name, value, "value must fit in a 32-bit integer"));
        }
        if n < lo || n > hi {
            let range = match (lo, hi) {
                (lo, i64::MAX) => format!("value must be at least {lo}"),
                (lo, hi) => format!("value must be between {lo} and {hi}"),
            };
            return Err(invalid(name, value, range));
        }
        Ok(n.to_string())
    };
    match (k.kind, k.check) {
        (Boolean, check) => {
            let b = match v.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(invalid(name, value, "expected true or false")),
            };
            match check {
                Unsupported(why) if b => Err(invalid(name, value, why)),
                _ => Ok(b.to_string()),
            }
        }
        (Int | Long, AtLeast(lo)) => number(lo, i64::MAX),
        (Int | Long, Between(lo, hi)) => number(lo, hi),
        (Int | Long, _) => number(i64::MIN, i64::MAX),
        (Double, _) => match v.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(v.to_string()),
            _ => Err(invalid(name, value, "value must be between 0 and 1")),
        },
        (_, OneOf(allowed)) if allowed.contains(&v) => Ok(v.to_string()),
        (_, OneOf(allowed)) => Err(invalid(
            name,
            value,
            format!("must be one of {}", allowed.join(", ")),
        )),
        (_, ListOf(allowed)) => {
            let items = list_items(v);
            if !items.is_empty() && items.iter().all(|i| allowed.contains(i)) {
                Ok(items.join(","))
            } else {
                Err(invalid(
                    name,
                    value,
                    format!("must be a list of {}", allowed.join(", ")),
                ))
            }
        }
        (_, Replicas) => {
            let items = list_items(v);
            let pair = |i: &str| {
                i.split_once(':').is_some_and(|(p, b)| {
                    p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                })
            };
            if items == ["*"] || items.iter().all(|i| pair(i)) {
                Ok(items.join(","))
            } else {
                Err(invalid(
                    name,
                    value,
                    "must be * or a list of partition:broker pairs",
                ))
            }
        }
        _ => Ok(v.to_string()),
    }
}

/// Validate and normalize a topic's whole override set, including the checks across keys
/// Kafka makes (against the broker defaults for keys the overrides leave out).
pub fn normalize_all(
    config: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ApiError> {
    let out = overrides
        .iter()
        .map(|(k, v)| normalize(k, v).map(|v| (k.clone(), v)))
        .collect::<Result<BTreeMap<_, _>, _>>()?;
    let lag = |name: &str| -> i64 {
        out.get(name)
            .cloned()
            .or_else(|| find(name).map(|k| broker_default(config, k).0))
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
    pub key: &'static TopicKey,
    pub value: String,
    pub source: i8,
    pub synonyms: Vec<Synonym>,
}

/// The value the storage layer actually uses for keys it knows, so what DescribeConfigs
/// shows is what the logs do (the broker's `log.*` keys were folded into `log_defaults`).
fn storage_default(config: &BrokerConfig, name: &str) -> Option<String> {
    let d = &config.log_defaults;
    Some(match name {
        "segment.bytes" => d.segment_bytes.to_string(),
        "segment.ms" => d.segment_ms.to_string(),
        "segment.index.bytes" => d.segment_index_bytes.to_string(),
        "index.interval.bytes" => d.index_interval_bytes.to_string(),
        "retention.ms" => d.retention_ms.to_string(),
        "retention.bytes" => d.retention_bytes.to_string(),
        "flush.messages" => d.flush_messages.to_string(),
        "flush.ms" => d.flush_ms.to_string(),
        "max.message.bytes" => d.max_message_bytes.to_string(),
        "message.timestamp.type" => TIMESTAMP_TYPES[usize::from(d.log_append_time)].to_string(),
        "cleanup.policy" => match (d.cleanup_policy.compact, d.cleanup_policy.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
        .to_string(),
        "delete.retention.ms" => d.delete_retention_ms.to_string(),
        "min.cleanable.dirty.ratio" => d.min_cleanable_dirty_ratio.to_string(),
        "min.compaction.lag.ms" => d.min_compaction_lag_ms.to_string(),
        "max.compaction.lag.ms" => d.max_compaction_lag_ms.to_string(),
        _ => return None,
    })
}

/// Broker keys from server.properties that set this topic key's default.
fn static_synonyms(config: &BrokerConfig, key: &TopicKey) -> Vec<Synonym> {
    key.broker_keys
        .iter()
        .filter_map(|b| {
            config.raw.get(*b).map(|v| Synonym {
                name: (*b).to_string(),
                value: v.clone(),
                source: source::STATIC_BROKER_CONFIG,
            })
        })
        .collect()
}

/// The broker-level default of a topic key and its source (static broker config when
/// server.properties set one of its broker keys).
#[must_use]
pub fn broker_default(config: &BrokerConfig, key: &TopicKey) -> (String, i8) {
    let statics = static_synonyms(config, key);
    let value = storage_default(config, key.name)
        .or_else(|| statics.first().map(|s| s.value.clone()))
        .unwrap_or_else(|| key.default.to_string());
    let source = if statics.is_empty() {
        source::DEFAULT_CONFIG
    } else {
        source::STATIC_BROKER_CONFIG
    };
    (value, source)
}

/// Every topic key with its effective value, source and synonyms.
#[must_use]
pub fn effective(config: &BrokerConfig, overrides: &BTreeMap<String, String>) -> Vec<Effective> {
    TOPIC_KEYS
        .iter()
        .map(|k| {
            let (default, default_source) = broker_default(config, k);
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(k.name) {
                synonyms.push(Synonym {
                    name: k.name.to_string(),
                    value: v.clone(),
                    source: source::DYNAMIC_TOPIC_CONFIG,
                });
            }
            synonyms.extend(static_synonyms(config, k));
            if let Some(primary) = k.broker_keys.first() {
                if default_source == source::DEFAULT_CONFIG {
                    synonyms.push(Synonym {
                        name: (*primary).to_string(),
                        value: default.clone(),
                        source: source::DEFAULT_CONFIG,
                    });
                }
            }
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

    #[test]
    fn keys_are_sorted_and_unique() {
        let names: Vec<_> = TOPIC_KEYS.iter().map(|k| k.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn defaults_are_valid_values() {
        for k in TOPIC_KEYS {
            assert!(normalize(k.name, k.default).is_ok(), "{}", k.name);
        }
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
        let config = BrokerConfig::default();
        let overrides = BTreeMap::from([
            ("min.compaction.lag.ms".to_string(), "100".to_string()),
            ("max.compaction.lag.ms".to_string(), "10".to_string()),
        ]);
        assert!(normalize_all(&config, &overrides).is_err());
    }

    #[test]
    fn sources_follow_server_properties() {
        let raw = BTreeMap::from([("log.retention.hours".to_string(), "1".to_string())]);
        let config = BrokerConfig::from_pairs(&raw).unwrap();
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
}
