//! The coordinator's settings, read from Kafka's broker keys through the config schema
//! (which holds their defaults and bounds).

use std::collections::BTreeMap;

use std::time::Duration;

use kafkalite_core::config::{assignor_short_name, BrokerSettings};
use kafkalite_core::records::Compression;

use crate::config::group::ConsumerTimeouts;
use crate::config::ConfigError;
use crate::coordinator::internal_log::Writes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group
    /// waits for more members (extended by each joiner, up to the rebalance timeout).
    pub initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms` / `group.max.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// `group.max.size`.
    pub max_size: usize,
    /// `offsets.topic.num.partitions`: partitions of `__consumer_offsets` when it is created.
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.replication.factor`: its replication factor in a cluster (capped by
    /// the controller side to the live brokers, with a warning).
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: i64,
    /// `offsets.retention.minutes`, in ms.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// `group.consumer.session.timeout.ms`: a consumer-protocol member that sends no
    /// heartbeat for this long is removed.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`: how often consumer-protocol members are
    /// told to heartbeat.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub consumer_max_size: usize,
    /// `group.consumer.assignors`, as short names; the first is the default.
    pub consumer_assignors: Vec<String>,
    /// Whether `group.coordinator.rebalance.protocols` names `consumer` (KIP-848's
    /// ConsumerGroupHeartbeat and ConsumerGroupDescribe are served).
    pub consumer_protocol: bool,
    /// How `__consumer_offsets` is written and read back: batches in
    /// `offsets.topic.compression.codec`, each replicated write waiting
    /// `offsets.commit.timeout.ms` for its ISR, loaded in reads of `offsets.load.buffer.size`.
    pub writes: Writes,
    /// `group.consumer.migration.policy`: whether a classic group with members becomes a
    /// consumer group when a consumer-protocol member joins it, and back when the last one
    /// leaves.
    pub migration_policy: MigrationPolicy,
}

/// Kafka's `ConsumerGroupMigrationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationPolicy {
    Bidirectional,
    Upgrade,
    Downgrade,
    Disabled,
}

impl MigrationPolicy {
    /// From the key's value (any case; the schema checked it; anything else is Kafka's
    /// fallback, `disabled`).
    #[must_use]
    pub fn parse(value: &str) -> MigrationPolicy {
        match value.to_ascii_lowercase().as_str() {
            "bidirectional" => MigrationPolicy::Bidirectional,
            "upgrade" => MigrationPolicy::Upgrade,
            "downgrade" => MigrationPolicy::Downgrade,
            _ => MigrationPolicy::Disabled,
        }
    }

    #[must_use]
    pub fn upgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade
        )
    }

    #[must_use]
    pub fn downgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
    }
}

impl Default for GroupConfig {
    /// Kafka's defaults, from the schema.
    fn default() -> Self {
        GroupConfig::from_settings(&BrokerSettings::default())
    }
}

impl GroupConfig {
    /// From the broker's keys as given (`BrokerConfig::raw`); bad values name the key.
    pub fn from_raw(raw: &BTreeMap<String, String>) -> Result<GroupConfig, ConfigError> {
        Ok(GroupConfig::from_settings(&BrokerSettings::validate(raw)?))
    }

    /// From settings already checked against the schema.
    #[must_use]
    pub fn from_settings(s: &BrokerSettings) -> GroupConfig {
        let count = |key: &str| usize::try_from(s.int(key)).expect("schema bounds are at least 0");
        GroupConfig {
            initial_rebalance_delay_ms: i64::from(s.int("group.initial.rebalance.delay.ms")),
            min_session_timeout_ms: s.int("group.min.session.timeout.ms"),
            max_session_timeout_ms: s.int("group.max.session.timeout.ms"),
            max_size: count("group.max.size"),
            offsets_topic_partitions: s.int("offsets.topic.num.partitions"),
            offsets_topic_replication_factor: i16::try_from(
                s.int("offsets.topic.replication.factor"),
            )
            .unwrap_or(i16::MAX),
            offsets_topic_segment_bytes: i64::from(s.int("offsets.topic.segment.bytes")),
            offsets_retention_ms: i64::from(s.int("offsets.retention.minutes")) * 60_000,
            offsets_retention_check_interval_ms: s.long("offsets.retention.check.interval.ms"),
            offset_metadata_max_bytes: count("offset.metadata.max.bytes"),
            consumer_session_timeout_ms: s.int("group.consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms: s.int("group.consumer.heartbeat.interval.ms"),
            consumer_max_size: count("group.consumer.max.size"),
            consumer_assignors: s
                .list("group.consumer.assignors")
                .iter()
                .filter_map(|name| assignor_short_name(name).map(String::from))
                .collect(),
            consumer_protocol: s
                .list("group.coordinator.rebalance.protocols")
                .iter()
                .any(|p| p == "consumer"),
            writes: Writes {
                // The schema bounds the id to Kafka's codecs.
                compression: Compression::from_attributes(
                    i16::try_from(s.int("offsets.topic.compression.codec")).unwrap_or(0),
                )
                .unwrap_or(Compression::None),
                replication_wait: Duration::from_millis(
                    u64::try_from(s.int("offsets.commit.timeout.ms")).unwrap_or(0),
                ),
                load_buffer_bytes: count("offsets.load.buffer.size"),
            },
            migration_policy: MigrationPolicy::parse(
                &s.get("group.consumer.migration.policy").unwrap_or_default(),
            ),
        }
    }

    /// A consumer group's timeouts where the group sets none of its own.
    #[must_use]
    pub fn consumer_timeouts(&self) -> ConsumerTimeouts {
        ConsumerTimeouts {
            session_timeout_ms: self.consumer_session_timeout_ms,
            heartbeat_interval_ms: self.consumer_heartbeat_interval_ms,
        }
    }

    /// Topic-level configs of `__consumer_offsets`, as Kafka creates it.
    #[must_use]
    pub fn offsets_topic_configs(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            (
                "segment.bytes".to_string(),
                self.offsets_topic_segment_bytes.to_string(),
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(
            GroupConfig::from_raw(&BTreeMap::new()).unwrap(),
            GroupConfig::default()
        );
        let raw = BTreeMap::from([
            (
                "group.initial.rebalance.delay.ms".to_string(),
                "0".to_string(),
            ),
            ("offsets.retention.minutes".to_string(), "2".to_string()),
            ("offsets.topic.num.partitions".to_string(), "3".to_string()),
        ]);
        let c = GroupConfig::from_raw(&raw).unwrap();
        assert_eq!(
            (
                c.initial_rebalance_delay_ms,
                c.offsets_retention_ms,
                c.offsets_topic_partitions
            ),
            (0, 120_000, 3)
        );
        assert_eq!(c.migration_policy, MigrationPolicy::Bidirectional);
        let policy = BTreeMap::from([(
            "group.consumer.migration.policy".to_string(),
            "UpGrade".to_string(),
        )]);
        let c = GroupConfig::from_raw(&policy).unwrap();
        assert!(c.migration_policy.upgrades() && !c.migration_policy.downgrades());
        let bad = BTreeMap::from([(
            "group.consumer.migration.policy".to_string(),
            "sideways".to_string(),
        )]);
        assert_eq!(
            GroupConfig::from_raw(&bad).unwrap_err().key,
            "group.consumer.migration.policy"
        );
        let bad = BTreeMap::from([("offsets.topic.num.partitions".to_string(), "0".to_string())]);
        assert_eq!(
            GroupConfig::from_raw(&bad).unwrap_err().key,
            "offsets.topic.num.partitions"
        );
    }
}
