//! What the broker knows about topic-level config keys: type, default (from the broker's
//! own `log.*` settings where Kafka derives it), validation, and where a value came from.

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

pub struct TopicKey {
    pub name: &'static str,
    /// The broker key that sets this key's default, as Kafka names it.
    pub broker_key: &'static str,
    pub kind: Kind,
    pub default: &'static str,
}

const fn key(
    name: &'static str,
    broker_key: &'static str,
    kind: Kind,
    default: &'static str,
) -> TopicKey {
    TopicKey {
        name,
        broker_key,
        kind,
        default,
    }
}

const MAX: &str = "9223372036854775807";

pub const TOPIC_KEYS: &[TopicKey] = &[
    key("cleanup.policy", "log.cleanup.policy", Kind::List, "delete"),
    key(
        "compression.type",
        "compression.type",
        Kind::String,
        "producer",
    ),
    key(
        "delete.retention.ms",
        "log.cleaner.delete.retention.ms",
        Kind::Long,
        "86400000",
    ),
    key(
        "file.delete.delay.ms",
        "log.segment.delete.delay.ms",
        Kind::Long,
        "60000",
    ),
    key(
        "flush.messages",
        "log.flush.interval.messages",
        Kind::Long,
        MAX,
    ),
    key("flush.ms", "log.flush.interval.ms", Kind::Long, MAX),
    key(
        "index.interval.bytes",
        "log.index.interval.bytes",
        Kind::Int,
        "4096",
    ),
    key(
        "max.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        Kind::Long,
        MAX,
    ),
    key(
        "max.message.bytes",
        "message.max.bytes",
        Kind::Int,
        "1048588",
    ),
    key(
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
        Kind::Long,
        MAX,
    ),
    key(
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
        Kind::Long,
        MAX,
    ),
    key(
        "message.timestamp.difference.max.ms",
        "log.message.timestamp.difference.max.ms",
        Kind::Long,
        MAX,
    ),
    key(
        "message.timestamp.type",
        "log.message.timestamp.type",
        Kind::String,
        "CreateTime",
    ),
    key(
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
        Kind::Double,
        "0.5",
    ),
    key(
        "min.compaction.lag.ms",
        "log.cleaner.min.compaction.lag.ms",
        Kind::Long,
        "0",
    ),
    key("min.insync.replicas", "min.insync.replicas", Kind::Int, "1"),
    key("preallocate", "log.preallocate", Kind::Boolean, "false"),
    key("retention.bytes", "log.retention.bytes", Kind::Long, "-1"),
    key("retention.ms", "log.retention.ms", Kind::Long, "604800000"),
    key(
        "segment.bytes",
        "log.segment.bytes",
        Kind::Int,
        "1073741824",
    ),
    key(
        "segment.index.bytes",
        "log.index.size.max.bytes",
        Kind::Int,
        "10485760",
    ),
    key("segment.jitter.ms", "log.roll.jitter.ms", Kind::Long, "0"),
    key("segment.ms", "log.roll.ms", Kind::Long, "604800000"),
    key(
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
        Kind::Boolean,
        "false",
    ),
];

#[must_use]
pub fn find(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.name == name)
}

fn invalid(key: &str, value: &str, why: &str) -> ApiError {
    ApiError::new(
        codes::INVALID_CONFIG,
        format!("invalid value {value:?} for configuration {key}: {why}"),
    )
}

/// Check one topic key and value; unknown keys are rejected by name.
pub fn validate(name: &str, value: &str) -> Result<(), ApiError> {
    let Some(k) = find(name) else {
        return Err(ApiError::new(
            codes::INVALID_CONFIG,
            format!("unknown topic config {name}"),
        ));
    };
    let ok = match k.kind {
        Kind::Int => value.trim().parse::<i32>().is_ok(),
        Kind::Long => value.trim().parse::<i64>().is_ok(),
        Kind::Boolean => matches!(value, "true" | "false"),
        Kind::Double => value
            .trim()
            .parse::<f64>()
            .is_ok_and(|v| (0.0..=1.0).contains(&v)),
        Kind::List => {
            let items: Vec<&str> = value.split(',').map(str::trim).collect();
            !items.is_empty() && items.iter().all(|i| matches!(*i, "delete" | "compact"))
        }
        Kind::String => match name {
            "compression.type" => matches!(
                value,
                "uncompressed" | "zstd" | "lz4" | "snappy" | "gzip" | "producer"
            ),
            "message.timestamp.type" => matches!(value, "CreateTime" | "LogAppendTime"),
            _ => true,
        },
    };
    if ok {
        Ok(())
    } else {
        Err(invalid(name, value, &format!("expected a {:?}", k.kind)))
    }
}

/// Validate every override of a topic.
pub fn validate_all(configs: &BTreeMap<String, String>) -> Result<(), ApiError> {
    configs.iter().try_for_each(|(k, v)| validate(k, v))
}

/// The broker-level default of a topic key and whether the broker's config set it.
#[must_use]
pub fn broker_default(config: &BrokerConfig, key: &TopicKey) -> (String, i8) {
    let d = &config.log_defaults;
    let derived = match key.name {
        "segment.bytes" => Some(d.segment_bytes.to_string()),
        "segment.ms" => Some(d.segment_ms.to_string()),
        "segment.index.bytes" => Some(d.segment_index_bytes.to_string()),
        "index.interval.bytes" => Some(d.index_interval_bytes.to_string()),
        "retention.ms" => Some(d.retention_ms.to_string()),
        "retention.bytes" => Some(d.retention_bytes.to_string()),
        "flush.messages" => Some(d.flush_messages.to_string()),
        "flush.ms" => Some(d.flush_ms.to_string()),
        "max.message.bytes" => Some(d.max_message_bytes.to_string()),
        "message.timestamp.type" => Some(
            if d.log_append_time {
                "LogAppendTime"
            } else {
                "CreateTime"
            }
            .to_string(),
        ),
        _ => config.raw.get(key.broker_key).cloned(),
    };
    let value = derived.unwrap_or_else(|| key.default.to_string());
    let set_by_broker = config.raw.contains_key(key.broker_key)
        || (key.name == "retention.ms"
            && ["log.retention.hours", "log.retention.minutes"]
                .iter()
                .any(|k| config.raw.contains_key(*k)))
        || (key.name == "segment.ms" && config.raw.contains_key("log.roll.hours"));
    let source = if set_by_broker {
        source::STATIC_BROKER_CONFIG
    } else {
        source::DEFAULT_CONFIG
    };
    (value, source)
}

/// Every topic key with its effective value and source, overrides first-class.
#[must_use]
pub fn effective(
    config: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
) -> Vec<(&'static TopicKey, String, i8)> {
    TOPIC_KEYS
        .iter()
        .map(|k| match overrides.get(k.name) {
            Some(v) => (k, v.clone(), source::DYNAMIC_TOPIC_CONFIG),
            None => {
                let (v, s) = broker_default(config, k);
                (k, v, s)
            }
        })
        .collect()
}
