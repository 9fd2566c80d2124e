//! Broker configuration from Kafka's own `server.properties` keys. The Python side parses
//! the file and flags; this validates values and names the bad key and value on error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kafkalite_core::storage::LogConfig;

use crate::net::listeners::{self, Listener};

#[derive(Debug, thiserror::Error)]
#[error("invalid config {key}={value}: {reason}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

fn bad(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

#[derive(Clone, Debug)]
pub struct BrokerConfig {
    pub node_id: i32,
    pub listeners: Vec<Listener>,
    /// host:port advertised in Metadata, per listener (defaults to the bound address).
    pub advertised: Vec<(String, String, u16)>,
    pub log_dirs: Vec<PathBuf>,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    pub auto_create_topics: bool,
    pub message_max_bytes: usize,
    pub socket_request_max_bytes: usize,
    /// Topic-level defaults, from the `log.*` broker keys.
    pub log_defaults: LogConfig,
    /// Every key as given, for DescribeConfigs on the broker resource.
    pub raw: BTreeMap<String, String>,
    /// How often closed segments past retention are deleted.
    pub retention_check_interval_ms: u64,
    /// Whether compacted topics are cleaned in the background, and how often.
    pub cleaner_enable: bool,
    pub cleaner_backoff_ms: u64,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            node_id: 1,
            listeners: vec![Listener::plaintext(
                "PLAINTEXT",
                "127.0.0.1:9092".parse().expect("valid"),
            )],
            advertised: Vec::new(),
            log_dirs: vec![PathBuf::from("/tmp/kafkalite-logs")],
            num_partitions: 1,
            default_replication_factor: 1,
            auto_create_topics: true,
            message_max_bytes: 1_048_588,
            socket_request_max_bytes: 104_857_600,
            log_defaults: LogConfig::default(),
            raw: BTreeMap::new(),
            retention_check_interval_ms: 300_000,
            cleaner_enable: true,
            cleaner_backoff_ms: 15_000,
        }
    }
}

/// An interval in milliseconds: at least 1, so a scheduler never spins.
fn positive_ms(key: &str, value: &str) -> Result<u64, ConfigError> {
    let n: u64 = int(key, value)?;
    if n == 0 {
        return Err(bad(key, value, "must be at least 1"));
    }
    Ok(n)
}

fn int<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, ConfigError> {
    value
        .trim()
        .parse()
        .map_err(|_| bad(key, value, "not a number"))
}

fn boolean(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, value, "must be true or false")),
    }
}

/// Broker keys that map onto topic-level keys (Kafka's `log.` prefix and friends).
const LOG_KEYS: &[(&str, &str)] = &[
    ("log.segment.bytes", "segment.bytes"),
    ("log.roll.ms", "segment.ms"),
    ("log.index.size.max.bytes", "segment.index.bytes"),
    ("log.index.interval.bytes", "index.interval.bytes"),
    ("log.retention.ms", "retention.ms"),
    ("log.retention.bytes", "retention.bytes"),
    ("log.flush.interval.messages", "flush.messages"),
    ("log.flush.interval.ms", "flush.ms"),
    ("message.max.bytes", "max.message.bytes"),
    ("log.message.timestamp.type", "message.timestamp.type"),
    ("log.cleanup.policy", "cleanup.policy"),
    ("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    (
        "log.cleaner.min.cleanable.ratio",
        "min.cleanable.dirty.ratio",
    ),
    ("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
    ("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms"),
];

impl BrokerConfig {
    /// Build from Kafka keys. Unknown keys are kept (and shown by DescribeConfigs) but not
    /// acted on.
    pub fn from_pairs(pairs: &BTreeMap<String, String>) -> Result<BrokerConfig, ConfigError> {
        let mut c = BrokerConfig {
            raw: pairs.clone(),
            ..BrokerConfig::default()
        };
        // Retention hours/minutes are overridden by the finer-grained key when both are set.
        let mut retention_ms: Option<i64> = None;
        for unit in [
            ("log.retention.hours", 3_600_000i64),
            ("log.retention.minutes", 60_000),
            ("log.retention.ms", 1),
        ] {
            if let Some(v) = pairs.get(unit.0) {
                let n: i64 = int(unit.0, v)?;
                retention_ms = Some(if n < 0 { -1 } else { n * unit.1 });
            }
        }
        if let Some(hours) = pairs.get("log.roll.hours") {
            let n: i64 = int("log.roll.hours", hours)?;
            c.log_defaults
                .set("segment.ms", &(n * 3_600_000).to_string())
                .map_err(|e| bad("log.roll.hours", hours, e.to_string()))?;
        }
        for (broker_key, topic_key) in LOG_KEYS {
            if *broker_key == "log.retention.ms" {
                continue;
            }
            if let Some(v) = pairs.get(*broker_key) {
                c.log_defaults
                    .set(topic_key, v)
                    .map_err(|e| bad(broker_key, v, e.to_string()))?;
            }
        }
        if let Some(ms) = retention_ms {
            c.log_defaults.retention_ms = ms;
        }
        let listener_settings =
            listeners::from_settings(pairs).map_err(|e| bad(e.key, &e.value, e.reason))?;
        c.listeners = listener_settings.listeners;
        c.advertised = listener_settings.advertised;
        for (key, value) in pairs {
            match key.as_str() {
                "node.id" | "broker.id" => c.node_id = int(key, value)?,
                "log.dirs" | "log.dir" => {
                    c.log_dirs = value
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(PathBuf::from)
                        .collect();
                    if c.log_dirs.is_empty() {
                        return Err(bad(key, value, "no directory given"));
                    }
                }
                "num.partitions" => {
                    c.num_partitions = int(key, value)?;
                    if c.num_partitions < 1 {
                        return Err(bad(key, value, "must be at least 1"));
                    }
                }
                "default.replication.factor" => c.default_replication_factor = int(key, value)?,
                "auto.create.topics.enable" => c.auto_create_topics = boolean(key, value)?,
                "log.retention.check.interval.ms" => {
                    c.retention_check_interval_ms = positive_ms(key, value)?;
                }
                "log.cleaner.enable" => c.cleaner_enable = boolean(key, value)?,
                "log.cleaner.backoff.ms" => c.cleaner_backoff_ms = positive_ms(key, value)?,
                "message.max.bytes" => c.message_max_bytes = int(key, value)?,
                "socket.request.max.bytes" => {
                    c.socket_request_max_bytes = int(key, value)?;
                    if c.socket_request_max_bytes < 64 {
                        return Err(bad(key, value, "must be at least 64"));
                    }
                }
                _ => {}
            }
        }
        Ok(c)
    }
}
