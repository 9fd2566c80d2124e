//! Broker configuration from Kafka's own `server.properties` keys. The Python side parses
//! the file and flags; every key is checked against the core's config schema here, which
//! names the bad key and value on error and warns about keys it does not know.

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use kafkalite_core::config::ConfigError;
use kafkalite_core::config::{BrokerSettings, TOPIC_KEYS};
use kafkalite_core::storage::LogConfig;

use crate::net::listeners::{self, Listener};

pub mod broker_logger;
pub mod client_metrics;
pub mod client_metrics_apply;
pub mod client_metrics_store;
pub mod dynamic;
pub mod dynamic_apply;
pub mod group;
pub mod group_apply;
pub mod layers;
pub mod live;
pub mod source;
pub mod topic;

/// kafkalite's own broker key bounding a produced batch's decompressed size.
pub const DECOMPRESSED_MAX_KEY: &str = "kafkalite.batch.decompressed.max.bytes";

fn bad(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::new(key, value, reason)
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
    /// `fetch.max.bytes`: no Fetch response is filled past this, whatever it asks (KIP-541).
    pub fetch_max_bytes: i32,
    /// `connections.max.idle.ms`: a connection with no request for this long is closed,
    /// and a request frame must arrive whole within it; `None` (negative) never closes.
    pub connections_max_idle: Option<std::time::Duration>,
    /// Topic-level defaults, from the `log.*` broker keys, as the broker started. They
    /// change with the dynamic configs: logs read `BrokerState::dynamic`'s live ones.
    pub log_defaults: LogConfig,
    /// Every key as given, for DescribeConfigs on the broker resource.
    pub raw: BTreeMap<String, String>,
    /// How often closed segments past retention are deleted.
    pub retention_check_interval_ms: u64,
    /// Whether compacted topics are cleaned in the background, and how often.
    pub cleaner_enable: bool,
    pub cleaner_backoff_ms: u64,
    /// How often the scrubber re-verifies closed segments (`None`: never), and how fast.
    pub scrub_interval: Option<std::time::Duration>,
    pub scrub_bytes_per_second: u64,
    /// Every key checked against the schema, with its default when not given, and the
    /// warnings for keys the schema does not know (for the caller to print).
    pub settings: BrokerSettings,
    /// Set: cluster mode, topics and leaders come from the controller (ZooKeeper).
    pub zookeeper_connect: Option<String>,
    pub rack: Option<String>,
    /// `metrics.listen`: where the Prometheus endpoint listens (`None`: not served).
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Cluster mode: the dynamic configs ZooKeeper held at start (decrypted by the Python
    /// side), laid over these keys when the broker opens. A single node reads its own.
    pub dynamic_at_start: layers::DynamicLayers,
}

/// Topic-level defaults from the broker's `log.*` keys (Kafka's synonyms, in the topic
/// key's unit: log.retention.hours=1 is retention.ms=3600000).
pub fn log_defaults(s: &BrokerSettings) -> Result<LogConfig, ConfigError> {
    let mut log_defaults = LogConfig::default();
    for key in TOPIC_KEYS {
        if let Some((value, from)) = s.topic_value(key.name) {
            log_defaults.set(key.name, &value).map_err(|e| {
                bad(
                    from.name,
                    &s.get(from.name).unwrap_or_default(),
                    e.to_string(),
                )
            })?;
        }
    }
    let positive = |n: i64| u64::try_from(n).expect("schema bounds are at least 1");
    log_defaults.max_decompressed_bytes =
        usize::try_from(positive(s.long(DECOMPRESSED_MAX_KEY))).unwrap_or(usize::MAX);
    Ok(log_defaults)
}

impl Default for BrokerConfig {
    /// The schema's defaults.
    fn default() -> Self {
        BrokerConfig::from_pairs(&BTreeMap::new()).expect("schema defaults are valid")
    }
}

impl BrokerConfig {
    /// The log dir holding the broker's own stores (`.kafkalite/topics.json`, dynamic
    /// configs, ACLs, credentials, quotas, group configs): the first of `log.dirs` that
    /// already has a `.kafkalite` dir, so reordering `log.dirs` between starts keeps them;
    /// the first log dir for a new broker.
    #[must_use]
    pub fn metadata_dir(&self) -> &std::path::Path {
        self.log_dirs
            .iter()
            .find(|d| d.join(crate::cluster::file_store::METADATA_SUBDIR).is_dir())
            .or_else(|| self.log_dirs.first())
            .map_or(std::path::Path::new("."), PathBuf::as_path)
    }

    /// Build from Kafka keys. Unknown keys are kept (and shown by DescribeConfigs) but not
    /// acted on; `settings.warnings` names them.
    pub fn from_pairs(pairs: &BTreeMap<String, String>) -> Result<BrokerConfig, ConfigError> {
        let s = BrokerSettings::validate(pairs)?;
        let log_defaults = log_defaults(&s)?;
        let positive = |n: i64| u64::try_from(n).expect("schema bounds are at least 1");
        let mut c = BrokerConfig {
            node_id: s.int("node.id"),
            listeners: Vec::new(),
            advertised: Vec::new(),
            log_dirs: s.list("log.dirs").into_iter().map(PathBuf::from).collect(),
            num_partitions: s.int("num.partitions"),
            default_replication_factor: i16::try_from(s.int("default.replication.factor"))
                .map_err(|_| {
                    let v = s.get("default.replication.factor").unwrap_or_default();
                    bad(
                        "default.replication.factor",
                        &v,
                        "must fit in a 16-bit integer",
                    )
                })?,
            auto_create_topics: s.boolean("auto.create.topics.enable"),
            message_max_bytes: positive(s.long("message.max.bytes")) as usize,
            socket_request_max_bytes: positive(s.long("socket.request.max.bytes")) as usize,
            fetch_max_bytes: s.int("fetch.max.bytes"),
            connections_max_idle: u64::try_from(s.long("connections.max.idle.ms"))
                .ok()
                .map(std::time::Duration::from_millis),
            log_defaults,
            raw: pairs.clone(),
            retention_check_interval_ms: positive(s.long("log.retention.check.interval.ms")),
            cleaner_enable: s.boolean("log.cleaner.enable"),
            cleaner_backoff_ms: positive(s.long("log.cleaner.backoff.ms")),
            scrub_interval: u64::try_from(s.long("kafkalite.log.scrub.interval.ms"))
                .ok()
                .map(std::time::Duration::from_millis),
            scrub_bytes_per_second: positive(s.long("kafkalite.log.scrub.bytes.per.second")),
            settings: s.clone(),
            zookeeper_connect: s.get("zookeeper.connect").filter(|v| !v.trim().is_empty()),
            rack: s.get("broker.rack").filter(|v| !v.trim().is_empty()),
            metrics_listen: match s.get("metrics.listen").filter(|v| !v.trim().is_empty()) {
                Some(v) => Some(
                    parse_metrics_listen(&v)
                        .map_err(|e| bad("metrics.listen", &v, e.to_string()))?,
                ),
                None => None,
            },
            dynamic_at_start: layers::DynamicLayers::default(),
        };
        if s.is_set("broker.id") && !s.is_set("node.id") {
            c.node_id = s.int("broker.id");
        }
        // The listener keys have their own parser (net::listeners); the schema gives the
        // default listener.
        let mut pairs = pairs.clone();
        pairs
            .entry("listeners".into())
            .or_insert_with(|| s.get("listeners").expect("listeners has a default"));
        let listener_settings =
            listeners::from_settings(&pairs).map_err(|e| bad(e.key, &e.value, e.reason))?;
        c.listeners = listener_settings.listeners;
        c.advertised = listener_settings.advertised;
        Ok(c)
    }
}

/// `metrics.listen` as `host:port`, with or without an `http://` prefix and `/metrics`
/// path; the error names the value.
pub fn parse_metrics_listen(value: &str) -> anyhow::Result<std::net::SocketAddr> {
    let bare = value.trim().trim_start_matches("http://");
    let bare = bare.split('/').next().unwrap_or_default();
    bare.parse().map_err(|_| {
        anyhow::anyhow!(
            "Invalid value {value} for configuration metrics.listen: expected host:port \
             (e.g. 127.0.0.1:9404)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn typed_fields_come_from_the_schema() {
        let d = BrokerConfig::default();
        assert_eq!(d.node_id, 1);
        assert_eq!(d.listeners[0].bind.to_string(), "127.0.0.1:9092");
        assert_eq!(d.log_defaults, LogConfig::default());
        assert_eq!(d.message_max_bytes, d.log_defaults.max_message_bytes);
        assert!(d.auto_create_topics && d.cleaner_enable);
        assert_eq!(
            d.connections_max_idle,
            Some(std::time::Duration::from_secs(600))
        );
        let c = BrokerConfig::from_pairs(&pairs(&[
            ("broker.id", "4"),
            ("log.retention.hours", "2"),
            ("log.roll.ms", "5000"),
            ("log.roll.hours", "1"),
            ("log.cleanup.policy", "compact, delete"),
            ("num.partitions", "3"),
            ("log.cleaner.backoff.ms", "250"),
            ("connections.max.idle.ms", "-1"),
            (DECOMPRESSED_MAX_KEY, "4194304"),
        ]))
        .unwrap();
        assert_eq!(c.node_id, 4);
        assert_eq!(c.log_defaults.max_decompressed_bytes, 4 << 20);
        assert_eq!(c.log_defaults.retention_ms, 7_200_000);
        assert_eq!(
            c.log_defaults.segment_ms, 5000,
            "log.roll.ms wins over hours"
        );
        assert!(c.log_defaults.cleanup_policy.compact && c.log_defaults.cleanup_policy.delete);
        assert_eq!((c.num_partitions, c.cleaner_backoff_ms), (3, 250));
        assert_eq!(c.connections_max_idle, None, "negative: never closed");
        assert!(c.settings.warnings.is_empty());
    }

    #[test]
    fn unknown_keys_warn_and_bad_values_name_the_key() {
        let c = BrokerConfig::from_pairs(&pairs(&[("log.retention.hourz", "1")])).unwrap();
        assert_eq!(
            c.settings.warnings,
            ["The configuration 'log.retention.hourz' was supplied but isn't a known config."]
        );
        assert_eq!(c.log_defaults, LogConfig::default());
        for (key, value) in [
            ("log.retention.hours", "-7"),
            ("default.replication.factor", "40000"),
            ("log.cleaner.backoff.ms", "0"),
            (DECOMPRESSED_MAX_KEY, "12"),
            ("listeners", "PLAINTEXT://:port"),
        ] {
            let e = BrokerConfig::from_pairs(&pairs(&[(key, value)])).unwrap_err();
            assert_eq!((e.key.as_str(), e.value.as_str()), (key, value), "{e}");
        }
    }
}
