//! The broker's config as it stands now: server.properties with the dynamic layers
//! (`config::dynamic`) over it, checked against the schema, and the topic-level defaults
//! that follow from it. Kafka's `DynamicLogConfig`: a change to a broker synonym of a topic
//! key (`log.retention.ms`, `log.segment.bytes`, `message.max.bytes`, `min.insync.replicas`,
//! ...) reaches every hosted log whose topic does not override that key, at once; new
//! topics get it too (`config::dynamic_apply::reapply_log_configs`). Topic overrides keep
//! winning (`BrokerState::log_config`).

use std::collections::BTreeMap;

use kafkalite_core::config::{BrokerSettings, ConfigError};
use kafkalite_core::storage::LogConfig;

use super::layers::{base_key, DynamicLayers};

/// One consistent view: the layers, and what they make of the broker's settings.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// server.properties as given (DescribeConfigs' STATIC_BROKER_CONFIG).
    pub static_raw: BTreeMap<String, String>,
    pub layers: DynamicLayers,
    /// Every key checked, dynamic over static over the schema default.
    pub settings: BrokerSettings,
    /// The topic-level defaults hosted logs and new topics start from.
    pub log_defaults: LogConfig,
    /// `producer.id.expiration.ms`, read by each idempotent batch's partition.
    pub producer_id_expiration_ms: i64,
    /// `transaction.partition.verification.enable`, read by each transactional batch.
    pub transaction_verification: bool,
}

impl LiveConfig {
    /// Lay `layers` over `static_raw` and derive the settings and log defaults; a value
    /// that does not work is an error naming its key.
    pub fn derive(
        static_raw: &BTreeMap<String, String>,
        layers: &DynamicLayers,
    ) -> Result<LiveConfig, ConfigError> {
        let settings = BrokerSettings::validate(&layers.merged(static_raw))?;
        let log_defaults = super::log_defaults(&settings)?;
        Ok(LiveConfig {
            static_raw: static_raw.clone(),
            layers: layers.clone(),
            producer_id_expiration_ms: settings.long("producer.id.expiration.ms"),
            transaction_verification: settings.boolean("transaction.partition.verification.enable"),
            settings,
            log_defaults,
        })
    }
}

/// The topic key whose broker default the controller reads from its own server.properties
/// (it decides elections), so a dynamic value waits for its next start.
const CONTROLLER_READS: &str = "unclean.leader.election.enable";

/// Whether `name` is a broker synonym of a topic key the broker takes up at once: what
/// the logs hold (`LogConfig`: retention, segments, roll, flush, index, cleanup and
/// compaction, message size and timestamps, preallocate) and `min.insync.replicas`;
/// `compression.*` is shown and checked but kafkalite keeps batches as produced.
#[must_use]
pub fn applies_to_logs(name: &str) -> bool {
    base_key(name).is_some_and(|(k, prefixed)| {
        !prefixed && k.synonym.is_some_and(|s| s.topic != CONTROLLER_READS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn dynamic_layers_set_the_log_defaults_most_specific_first() {
        let static_raw = map(&[("log.retention.hours", "2"), ("log.segment.bytes", "4096")]);
        let none = LiveConfig::derive(&static_raw, &DynamicLayers::default()).unwrap();
        assert_eq!(none.log_defaults.retention_ms, 7_200_000);
        let layers = DynamicLayers {
            broker: map(&[("log.segment.bytes", "8192")]),
            default: map(&[("log.retention.ms", "1000"), ("log.segment.bytes", "2048")]),
        };
        let live = LiveConfig::derive(&static_raw, &layers).unwrap();
        assert_eq!(live.log_defaults.retention_ms, 1000);
        assert_eq!(live.log_defaults.segment_bytes, 8192);
        assert!(applies_to_logs("log.retention.ms"));
        assert!(applies_to_logs("min.insync.replicas"));
        assert!(!applies_to_logs("log.cleaner.threads"));
        assert!(!applies_to_logs("unclean.leader.election.enable"));
        assert!(!applies_to_logs("listener.name.ssl.ssl.keystore.location"));
    }

    #[test]
    fn a_bad_layer_names_its_key() {
        let layers = DynamicLayers {
            broker: BTreeMap::new(),
            default: map(&[("log.segment.bytes", "1")]),
        };
        let e = LiveConfig::derive(&BTreeMap::new(), &layers).unwrap_err();
        assert_eq!(e.key, "log.segment.bytes");
    }
}
