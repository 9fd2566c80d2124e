//! The transaction coordinator's settings, read from Kafka's broker keys through the config
//! schema (which holds their defaults and bounds).

use std::collections::BTreeMap;

use std::time::Duration;

use kafkalite_core::config::BrokerSettings;
use kafkalite_core::records::Compression;

use crate::config::ConfigError;
use crate::coordinator::internal_log::Writes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`: partitions of `__transaction_state`.
    pub log_partitions: i32,
    /// `transaction.state.log.segment.bytes`.
    pub log_segment_bytes: i64,
    /// `transaction.state.log.replication.factor` / `.min.isr` (cluster mode; a single
    /// node has one replica whatever they say).
    pub log_replication_factor: i16,
    pub log_min_isr: i32,
    /// `transaction.max.timeout.ms`: the largest timeout a producer may ask for.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: idle transactional ids are forgotten after this.
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_check_interval_ms: u64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub expire_check_interval_ms: u64,
    /// How `__transaction_state` is written and read back: uncompressed, each write
    /// waiting `request.timeout.ms` for its ISR, loaded in reads of
    /// `transaction.state.log.load.buffer.size`.
    pub writes: Writes,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig::from_settings(&BrokerSettings::default())
    }
}

impl TxnConfig {
    /// From the broker's keys as given (`BrokerConfig::raw`); bad values name the key.
    pub fn from_raw(raw: &BTreeMap<String, String>) -> Result<TxnConfig, ConfigError> {
        Ok(TxnConfig::from_settings(&BrokerSettings::validate(raw)?))
    }

    #[must_use]
    pub fn from_settings(s: &BrokerSettings) -> TxnConfig {
        let ms = |key: &str| u64::try_from(s.int(key)).expect("schema bound is at least 1");
        TxnConfig {
            log_partitions: s.int("transaction.state.log.num.partitions"),
            log_segment_bytes: i64::from(s.int("transaction.state.log.segment.bytes")),
            log_replication_factor: i16::try_from(
                s.int("transaction.state.log.replication.factor"),
            )
            .unwrap_or(i16::MAX),
            log_min_isr: s.int("transaction.state.log.min.isr"),
            max_timeout_ms: s.int("transaction.max.timeout.ms"),
            id_expiration_ms: i64::from(s.int("transactional.id.expiration.ms")),
            abort_check_interval_ms: ms(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            ),
            expire_check_interval_ms: ms(
                "transaction.remove.expired.transaction.cleanup.interval.ms",
            ),
            writes: Writes {
                compression: Compression::None,
                replication_wait: Duration::from_millis(
                    u64::try_from(s.int("request.timeout.ms")).unwrap_or(0),
                ),
                load_buffer_bytes: usize::try_from(s.int("transaction.state.log.load.buffer.size"))
                    .unwrap_or(1),
            },
        }
    }

    /// Topic configs of `__transaction_state`, as Kafka creates it.
    #[must_use]
    pub fn log_topic_configs(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("compression.type".to_string(), "uncompressed".to_string()),
            (
                "min.insync.replicas".to_string(),
                self.log_min_isr.to_string(),
            ),
            (
                "segment.bytes".to_string(),
                self.log_segment_bytes.to_string(),
            ),
            (
                "unclean.leader.election.enable".to_string(),
                "false".to_string(),
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_overrides_apply() {
        let c = TxnConfig::default();
        assert_eq!(c.log_partitions, 50);
        assert_eq!(c.max_timeout_ms, 900_000);
        assert_eq!(c.id_expiration_ms, 604_800_000);
        let raw = BTreeMap::from([
            (
                "transaction.state.log.num.partitions".to_string(),
                "3".to_string(),
            ),
            ("transaction.max.timeout.ms".to_string(), "5000".to_string()),
        ]);
        let c = TxnConfig::from_raw(&raw).unwrap();
        assert_eq!((c.log_partitions, c.max_timeout_ms), (3, 5000));
        let bad = BTreeMap::from([(
            "transaction.state.log.num.partitions".to_string(),
            "0".to_string(),
        )]);
        assert!(TxnConfig::from_raw(&bad).is_err());
    }
}
