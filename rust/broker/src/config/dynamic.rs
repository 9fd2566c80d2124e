//! Dynamic broker configs (Kafka's KIP-226 `DynamicBrokerConfig`): two layers over
//! `server.properties` — this broker's own (`/config/brokers/<id>` in ZooKeeper, or the
//! data dir's `dynamic-broker-configs.json` on a single node) and the cluster-wide default
//! (`/config/brokers/<default>`). A value is looked up per-broker dynamic, then cluster
//! default, then static, then the schema default, as Kafka does.
//!
//! Which keys may change follows Kafka's rules: read-only keys never; SSL and SASL keys
//! only per listener (`listener.name.<l>.…`) and only per broker. Applied at once:
//! listener security (`security::reload`), connection limits (`max.connection*`), and
//! every broker synonym of a topic key — the `log.*` topic defaults, `message.max.bytes`,
//! `min.insync.replicas`, ... (`config::live`: hosted logs without a topic override take
//! the new value, new topics start from it), and the keys read at each use
//! (`producer.id.expiration.ms`, `transaction.partition.verification.enable`). Every other
//! dynamic key (`log.cleaner.*`
//! threads and buffers, `num.*.threads`, `num.replica.fetchers`,
//! `connections.max.reauth.ms`, `advertised.listeners`, and the broker default of
//! `unclean.leader.election.enable`, which the controller reads) is stored and becomes
//! the broker's value at its next start (logged when altered).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use kafkalite_core::config::{self as schema, ConfigKey};

use super::layers::{base_key, is_security, DynamicLayers, LISTENER_PREFIX};
use super::live::LiveConfig;
use super::BrokerConfig;
use crate::errors::{codes, ApiError};

/// ZooKeeper's name of the cluster-wide entity.
pub const DEFAULT_ENTITY: &str = "<default>";
const FILE_NAME: &str = "dynamic-broker-configs.json";

/// Whether `name`'s value is a secret: its schema key is a PASSWORD (with or without a
/// listener prefix), or its name says so. Never returned by DescribeConfigs, encrypted in
/// ZooKeeper, never logged.
#[must_use]
pub fn is_sensitive(name: &str) -> bool {
    base_key(name).map_or_else(|| schema::is_sensitive(name), |(k, _)| k.sensitive())
}

/// Whether a change to `name` takes effect at once (listener security), rather than at
/// the broker's next start.
#[must_use]
pub fn applies_live(name: &str) -> bool {
    base_key(name).is_some_and(|(k, prefixed)| prefixed && is_security(k))
}

/// Whether `name` is a connection limit (`max.connections`, `max.connections.per.ip`,
/// its overrides, `max.connection.creation.rate`; broker-wide or per listener): the
/// acceptor applies a change at once.
#[must_use]
pub fn is_connection_limit(name: &str) -> bool {
    base_key(name).is_some_and(|(k, _)| k.name.starts_with("max.connection"))
}

/// Keys the broker reads from the live config each time it needs them (`LiveConfig`), so
/// a change applies to the next request.
const READ_AT_EACH_USE: &[&str] = &[
    "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
];

/// Whether `name` is read at each use (a change applies to the next request).
#[must_use]
pub fn read_at_each_use(name: &str) -> bool {
    READ_AT_EACH_USE.contains(&name)
}

/// Kafka's `DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS`: the keystore and truststore keys,
/// which change only per listener (`listener.name.<l>.<key>`); every other TLS and SASL key
/// Kafka 4.4 also takes by its own name, for all listeners.
const LISTENER_ONLY: &[&str] = &[
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
];

/// A CLASS key names a Java class Kafka loads; kafkalite runs no JVM plugins, so only
/// Kafka's own default (the behaviour kafkalite has built in) can be found.
fn check_class(key: &ConfigKey, value: &str) -> Result<(), String> {
    let v = value.trim();
    if key.ty != schema::Type::Class || schema::default_value(key).as_deref() == Some(v) {
        return Ok(());
    }
    Err(format!("Class {v} could not be found."))
}

const NOT_DYNAMIC: &str = "Cannot update these configs dynamically";
const PER_LISTENER: &str =
    "These security configs can be dynamically updated only per-listener using the listener \
     prefix";
const PER_BROKER: &str =
    "Cannot update these configs at default cluster level, broker id must be specified";

/// Check one key and value for a dynamic update of this broker (`per_broker`) or of the
/// cluster default, as Kafka 4.4's `DynamicBrokerConfig.validateConfigs` does, in its order
/// and words (a refusal is INVALID_REQUEST: Kafka's ConfigException becomes an
/// InvalidRequestException); the value as stored. Recorded key by key from Kafka 4.4.0 in
/// `kafkalite/conformance/broker_keys-4.4.0.json` (tests/dyncfg/test_kafka_broker_keys.py):
/// - a name Kafka does not define is a custom config: stored as given, at either level;
/// - any `listener.name.<l>.` name is per broker only; a TLS or SASL key under it has its
///   type checked (a key not dynamic by its own name in Kafka's wrapped words);
/// - a read-only key is refused, then a keystore or truststore key without a listener
///   prefix, then a value of the wrong type or out of bounds, then a per-broker key sent
///   to the cluster default.
pub fn check(name: &str, value: &str, per_broker: bool) -> Result<String, ApiError> {
    let refuse = |why: &str| ApiError::new(codes::INVALID_REQUEST, format!("{why}: [{name}]"));
    let invalid = |key: &ConfigKey, shown_name: &str, reason: &str| {
        // Never echo a secret in an error message.
        let shown = if key.sensitive() { "[hidden]" } else { value };
        ApiError::new(
            codes::INVALID_REQUEST,
            format!("Invalid value {shown} for configuration {shown_name}: {reason}"),
        )
    };
    if name.starts_with(LISTENER_PREFIX) {
        let key = base_key(name).map(|(k, _)| k).filter(|k| is_security(k));
        let Some(key) = key else {
            // Any other name under a listener is stored for that listener, per broker.
            return if per_broker {
                Ok(value.to_string())
            } else {
                Err(refuse(PER_BROKER))
            };
        };
        // A key Kafka reconfigures by its own name has its value checked first; one it
        // does not is refused at the cluster default before its value is looked at, and
        // its ConfigException comes wrapped in a second one, both shown.
        if key.read_only() && !per_broker {
            return Err(refuse(PER_BROKER));
        }
        let checked = check_class(key, value)
            .and_then(|()| schema::check_broker(key, value).map_err(|e| e.reason));
        let stored = checked.map_err(|reason| {
            let plain = invalid(key, key.name, &reason);
            if key.read_only() {
                ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                        "Invalid value org.apache.kafka.common.config.ConfigException: {} \
                         for configuration Invalid dynamic configuration",
                        plain.message
                    ),
                )
            } else {
                plain
            }
        })?;
        if !per_broker {
            return Err(refuse(PER_BROKER));
        }
        return Ok(stored);
    }
    let Some(key) = schema::broker_key(name) else {
        // Kafka keeps a name it does not define as a custom config (for plugins).
        return Ok(value.to_string());
    };
    if key.read_only() {
        return Err(refuse(NOT_DYNAMIC));
    }
    if LISTENER_ONLY.contains(&name) {
        return Err(refuse(PER_LISTENER));
    }
    check_class(key, value).map_err(|reason| invalid(key, name, &reason))?;
    let stored = schema::check_broker(key, value).map_err(|e| invalid(key, name, &e.reason))?;
    if !per_broker && key.update == schema::Update::PerBroker {
        return Err(refuse(PER_BROKER));
    }
    Ok(stored)
}

/// The broker's dynamic layers, the static config they sit over, and what they make of
/// the broker's settings (`live::LiveConfig`), replaced together.
pub struct DynamicStore {
    /// server.properties as given (DescribeConfigs' STATIC_BROKER_CONFIG).
    pub static_raw: BTreeMap<String, String>,
    live: RwLock<Arc<LiveConfig>>,
    /// Single node: where the layers are kept. Cluster mode: `None` (ZooKeeper has them).
    path: Option<PathBuf>,
}

impl DynamicStore {
    /// A single node's store in `dir` (empty when the file does not exist yet).
    pub fn open(dir: &Path, static_raw: BTreeMap<String, String>) -> anyhow::Result<Self> {
        let path = dir.join(FILE_NAME);
        let layers = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => DynamicLayers::default(),
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        };
        Self::with(static_raw, &layers, Some(path))
    }

    /// Cluster mode: the layers ZooKeeper held when the broker started.
    pub fn in_memory(
        static_raw: BTreeMap<String, String>,
        layers: &DynamicLayers,
    ) -> anyhow::Result<Self> {
        Self::with(static_raw, layers, None)
    }

    fn with(
        static_raw: BTreeMap<String, String>,
        layers: &DynamicLayers,
        path: Option<PathBuf>,
    ) -> anyhow::Result<Self> {
        let live = LiveConfig::derive(&static_raw, layers)
            .map_err(|e| hide_value(e.key, e.reason).into_core())?;
        Ok(DynamicStore {
            static_raw,
            live: RwLock::new(Arc::new(live)),
            path,
        })
    }

    #[must_use]
    pub fn layers(&self) -> DynamicLayers {
        self.live().layers.clone()
    }

    /// The broker's config as it stands now.
    #[must_use]
    pub fn live(&self) -> Arc<LiveConfig> {
        self.live
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether this store writes its own file (single node).
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    /// Replace the layers and what they derive (and on a single node write the layers,
    /// atomically, readable by the broker's user only: they may hold keystore passwords).
    pub fn set(&self, live: LiveConfig) -> anyhow::Result<()> {
        if let Some(path) = &self.path {
            crate::cluster::file_store::write_private_atomically(
                path,
                &serde_json::to_vec_pretty(&live.layers)?,
            )?;
        }
        *self
            .live
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(live);
        Ok(())
    }
}

/// The broker's config with its dynamic layers over server.properties, and the store.
pub fn at_start(config: BrokerConfig) -> anyhow::Result<(BrokerConfig, DynamicStore)> {
    let static_raw = config.raw.clone();
    let store = if config.zookeeper_connect.is_some() {
        DynamicStore::in_memory(static_raw, &config.dynamic_at_start)?
    } else {
        DynamicStore::open(config.metadata_dir(), static_raw)?
    };
    let layers = store.layers();
    if layers == DynamicLayers::default() {
        return Ok((config, store));
    }
    let merged = layers.merged(&store.static_raw);
    let effective =
        BrokerConfig::from_pairs(&merged).map_err(|e| hide_value(e.key, e.reason).into_core())?;
    Ok((effective, store))
}

/// A config failure named by key and reason only (the value may be a secret).
pub(super) struct Hidden {
    key: String,
    reason: String,
}

impl std::fmt::Display for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Invalid config {}: {}", self.key, self.reason)
    }
}

impl Hidden {
    pub(super) fn into_core(self) -> anyhow::Error {
        kafkalite_core::Error::InvalidConfig {
            key: self.key,
            value: "[hidden]".into(),
            reason: self.reason,
        }
        .into()
    }
}

pub(super) fn hide_value(key: String, reason: String) -> Hidden {
    Hidden { key, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn per_broker_wins_over_default_over_static() {
        let layers = DynamicLayers {
            broker: map(&[("a", "broker")]),
            default: map(&[("a", "default"), ("b", "default")]),
        };
        let merged = layers.merged(&map(&[("a", "static"), ("b", "static"), ("c", "static")]));
        assert_eq!(
            merged,
            map(&[("a", "broker"), ("b", "default"), ("c", "static")])
        );
        assert_eq!(
            layers.lookup("a"),
            Some(("broker".into(), source::DYNAMIC_BROKER_CONFIG))
        );
        assert_eq!(
            layers.lookup("b"),
            Some(("default".into(), source::DYNAMIC_DEFAULT_BROKER_CONFIG))
        );
        assert_eq!(layers.sources("a").len(), 2);
        assert_eq!(layers.lookup("c"), None);
    }

    #[test]
    fn kafkas_rules_on_what_may_change_and_where() {
        let ks = "listener.name.ssl.ssl.keystore.location";
        assert_eq!(check(ks, " /k.p12 ", true).unwrap(), "/k.p12");
        assert!(applies_live(ks));
        assert!(applies_live(
            "listener.name.sasl_ssl.plain.sasl.jaas.config"
        ));
        let e = check(ks, "/k.p12", false).unwrap_err();
        assert!(e.message.contains("default cluster level"), "{e:?}");
        let e = check("ssl.keystore.location", "/k", true).unwrap_err();
        assert!(e.message.contains("per-listener"), "{e:?}");
        let e = check("broker.id", "3", true).unwrap_err();
        assert!(e.message.contains("dynamically"), "{e:?}");
        // Kafka keeps a name it does not define (a plugin's), at either level.
        assert_eq!(check("no.such.key", "3", true).unwrap(), "3");
        assert_eq!(check("no.such.key", "3", false).unwrap(), "3");
        // Kafka 4.4 takes the TLS and SASL keys but the keystore's and truststore's by
        // their own name, per broker.
        assert_eq!(
            check("sasl.kerberos.min.time.before.relogin", "1", true).unwrap(),
            "1"
        );
        let e = check("sasl.kerberos.min.time.before.relogin", "1", false).unwrap_err();
        assert_eq!(
            e.message,
            "Cannot update these configs at default cluster level, broker id must be \
             specified: [sasl.kerberos.min.time.before.relogin]"
        );
        let e = check("sasl.kerberos.min.time.before.relogin", "abc", false).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid value abc for configuration sasl.kerberos.min.time.before.relogin: Not a \
             number of type LONG"
        );
        assert_eq!(check("log.cleaner.threads", "2", false).unwrap(), "2");
        assert_eq!(check("log.retention.ms", "1000", false).unwrap(), "1000");
        // Kafka 4.1 changes the ms key only; the hours and minutes keys need a restart.
        let e = check("log.retention.hours", "1", false).unwrap_err();
        assert!(e.message.contains("dynamically"), "{e:?}");
        assert!(!applies_live("log.cleaner.threads"));
        let e = check("log.cleaner.threads", "-1", false).unwrap_err();
        assert!(e.message.contains("log.cleaner.threads"), "{e:?}");
        let e = check("listener.name.ssl.ssl.client.auth", "maybe", true).unwrap_err();
        assert!(e.message.contains("ssl.client.auth"), "{e:?}");
    }

    #[test]
    fn listener_only_keys_change_under_a_listener_prefix_alone() {
        // Kafka 4.1.1: not dynamic by their own name, reconfigured per listener (and, for
        // re-authentication, per listener and mechanism).
        for bare in [
            "connections.max.reauth.ms",
            "sasl.oauthbearer.jwks.endpoint.url",
        ] {
            let e = check(bare, "1", true).unwrap_err();
            assert!(e.message.contains("dynamically"), "{bare}: {e:?}");
            assert!(schema::broker_key(bare).unwrap().read_only(), "{bare}");
        }
        let per_mechanism = "listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms";
        assert_eq!(check(per_mechanism, "60000", true).unwrap(), "60000");
        assert!(applies_live(per_mechanism));
        let url = "listener.name.sasl_ssl.sasl.oauthbearer.jwks.endpoint.url";
        assert_eq!(check(url, "file:///k", true).unwrap(), "file:///k");
        let e = check(per_mechanism, "60000", false).unwrap_err();
        assert!(e.message.contains("default cluster level"), "{e:?}");
    }

    #[test]
    fn a_single_nodes_layers_survive_a_reopen_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let store = DynamicStore::open(dir.path(), BTreeMap::new()).unwrap();
        let layers = DynamicLayers {
            broker: map(&[("listener.name.ssl.ssl.keystore.password", "pw")]),
            default: BTreeMap::new(),
        };
        store
            .set(LiveConfig::derive(&BTreeMap::new(), &layers).unwrap())
            .unwrap();
        let again = DynamicStore::open(dir.path(), BTreeMap::new()).unwrap();
        assert_eq!(again.layers(), layers);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE_NAME))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
