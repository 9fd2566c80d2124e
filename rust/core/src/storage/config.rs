//! Topic-level log configuration, spelled as Kafka spells the topic keys. Names, defaults and
//! bounds come from the config schema (`crate::config`); this holds the values the storage
//! layer acts on, already parsed.

use crate::config::{self, ConfigError, TIMESTAMP_TYPES};
use crate::error::Result;
use crate::records::{RecordRules, DEFAULT_MAX_DECOMPRESSED_BYTES};

/// Which of Kafka's cleanup policies a topic has: `delete` (retention), `compact` (the
/// cleaner keeps the latest record per key), or both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl CleanupPolicy {
    /// Kafka's list syntax, already checked by the schema: "delete", "compact,delete", ...
    fn from_checked(value: &str) -> CleanupPolicy {
        let items: Vec<&str> = value.split(',').collect();
        CleanupPolicy {
            delete: items.contains(&"delete"),
            compact: items.contains(&"compact"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub segment_index_bytes: u64,
    pub index_interval_bytes: u64,
    /// -1 keeps data forever.
    pub retention_ms: i64,
    /// -1 keeps data of any size.
    pub retention_bytes: i64,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub max_message_bytes: usize,
    pub log_append_time: bool,
    pub cleanup_policy: CleanupPolicy,
    /// How long a tombstone stays readable once the cleaner has seen it.
    pub delete_retention_ms: i64,
    /// Clean when dirty bytes / cleanable bytes reaches this (0.0..=1.0).
    pub min_cleanable_dirty_ratio: f64,
    /// Records younger than this are not compacted.
    pub min_compaction_lag_ms: i64,
    /// Dirty records older than this are compacted whatever the dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// Reserve a fixed 64 MiB ahead of appends instead of a window sized to the write
    /// rate (see `io::Reservation`).
    pub preallocate: bool,
    /// Ceiling on a produced batch's records once decompressed. Broker-wide (the broker key
    /// `kafkalite.batch.decompressed.max.bytes`), not a topic key: it bounds the broker's
    /// work per request, whatever the topic.
    pub max_decompressed_bytes: usize,
    /// How far a CreateTime may lie behind / ahead of the broker's clock (KIP-937).
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    /// Hold produced records to those bounds. Off by default so tests and tools appending
    /// batches with fixed timestamps under a fake clock are unaffected; the broker turns it
    /// on for every topic it serves.
    pub check_timestamps: bool,
}

// The ratio is validated to lie in [0, 1], so it is never NaN and equality is total.
impl Eq for LogConfig {}

/// The topic keys this struct holds; the others (compression levels, throttles, ...) are
/// checked by the schema but not acted on by the storage layer.
pub const STORAGE_KEYS: &[&str] = &[
    "cleanup.policy",
    "delete.retention.ms",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "preallocate",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.ms",
];

impl Default for LogConfig {
    /// Kafka's topic defaults, from the schema.
    fn default() -> Self {
        let mut config = LogConfig {
            segment_bytes: 0,
            segment_ms: 0,
            segment_index_bytes: 0,
            index_interval_bytes: 0,
            retention_ms: 0,
            retention_bytes: 0,
            flush_messages: 0,
            flush_ms: 0,
            max_message_bytes: 0,
            log_append_time: false,
            cleanup_policy: CleanupPolicy::default(),
            delete_retention_ms: 0,
            min_cleanable_dirty_ratio: 0.0,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: 0,
            preallocate: false,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
            timestamp_before_max_ms: 0,
            timestamp_after_max_ms: 0,
            check_timestamps: false,
        };
        for name in STORAGE_KEYS {
            let key = config::topic_key(name).expect("storage keys are topic keys");
            let value = config::default_value(key).expect("topic keys have defaults");
            config
                .set(name, &value)
                .expect("schema defaults pass their checks");
        }
        config
    }
}

impl LogConfig {
    /// Apply one topic-level key, checked against the schema. Keys outside the schema are
    /// ignored here (the broker rejects them by name); a bad value for a topic key is an
    /// error naming it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let Some(schema) = config::topic_key(key) else {
            return Ok(());
        };
        let v = config::normalize(schema, value).map_err(|r| ConfigError::new(key, value, r))?;
        let int = || -> i64 { v.parse().expect("checked integer") };
        // The schema's bounds keep the unsigned fields non-negative.
        let unsigned = || -> u64 { u64::try_from(int()).expect("checked at least 0") };
        match key {
            "segment.bytes" => self.segment_bytes = unsigned(),
            "segment.ms" => self.segment_ms = int(),
            "segment.index.bytes" => self.segment_index_bytes = unsigned(),
            "index.interval.bytes" => self.index_interval_bytes = unsigned(),
            "retention.ms" => self.retention_ms = int(),
            "retention.bytes" => self.retention_bytes = int(),
            "flush.messages" => self.flush_messages = int(),
            "flush.ms" => self.flush_ms = int(),
            "max.message.bytes" => self.max_message_bytes = unsigned() as usize,
            "message.timestamp.type" => self.log_append_time = v == TIMESTAMP_TYPES[1],
            "cleanup.policy" => self.cleanup_policy = CleanupPolicy::from_checked(&v),
            "delete.retention.ms" => self.delete_retention_ms = int(),
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = v.parse().expect("checked ratio");
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = int(),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = int(),
            "preallocate" => self.preallocate = v == "true",
            "message.timestamp.before.max.ms" => self.timestamp_before_max_ms = int(),
            "message.timestamp.after.max.ms" => self.timestamp_after_max_ms = int(),
            _ => {}
        }
        Ok(())
    }

    /// Age at which the active segment rolls. Kafka caps `segment.ms` by
    /// `max.compaction.lag.ms` on compacted topics: records in the active segment are never
    /// cleaned, so the segment must close in time for the lag bound to hold.
    #[must_use]
    pub fn roll_ms(&self) -> i64 {
        if self.cleanup_policy.compact {
            self.segment_ms.min(self.max_compaction_lag_ms)
        } else {
            self.segment_ms
        }
    }

    /// What every produced record is held to (`records::record_check`).
    #[must_use]
    pub fn record_rules(&self, now_ms: i64) -> RecordRules {
        let (timestamp_min, timestamp_max) = if self.log_append_time || !self.check_timestamps {
            (i64::MIN, i64::MAX)
        } else {
            (
                now_ms.saturating_sub(self.timestamp_before_max_ms),
                now_ms.saturating_add(self.timestamp_after_max_ms),
            )
        };
        RecordRules {
            require_keys: self.cleanup_policy.compact,
            max_decompressed_bytes: self.max_decompressed_bytes,
            timestamp_min,
            timestamp_max,
        }
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut config = LogConfig::default();
        for (key, value) in pairs {
            config.set(key, value)?;
        }
        Ok(config)
    }

    #[must_use]
    pub fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }

    #[must_use]
    pub fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes / 12) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn parses_kafka_keys_and_names_bad_values() {
        let c = LogConfig::from_pairs([("segment.bytes", "1024"), ("retention.ms", "-1")]).unwrap();
        assert_eq!(c.segment_bytes, 1024);
        assert_eq!(c.retention_ms, -1);
        let err = LogConfig::from_pairs([("retention.bytes", "lots")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("Invalid value lots for configuration retention.bytes"),
            "{err}"
        );
        assert!(LogConfig::from_pairs([("segment.bytes", "3")]).is_err());
        assert!(LogConfig::from_pairs([("message.timestamp.type", "Now")]).is_err());
    }

    #[test]
    fn defaults_are_kafkas() {
        let d = LogConfig::default();
        assert_eq!(d.segment_bytes, 1 << 30);
        assert_eq!(d.segment_ms, 7 * 24 * 3_600_000);
        assert_eq!(d.retention_ms, 7 * 24 * 3_600_000);
        assert_eq!(d.segment_index_bytes, 10 << 20);
        assert_eq!(d.index_interval_bytes, 4 << 10);
        assert_eq!(
            (d.retention_bytes, d.flush_messages, d.flush_ms),
            (-1, i64::MAX, i64::MAX)
        );
        assert_eq!(d.max_message_bytes, (1 << 20) + 12);
        assert!(!d.log_append_time);
        for key in STORAGE_KEYS {
            assert!(crate::config::topic_key(key).is_some(), "{key}");
        }
    }

    #[test]
    fn decompression_cap_default_is_the_broker_keys() {
        let key = crate::config::broker_key("kafkalite.batch.decompressed.max.bytes").unwrap();
        let default = crate::config::default_value(key).unwrap();
        assert_eq!(
            default,
            LogConfig::default().max_decompressed_bytes.to_string()
        );
    }

    #[test]
    fn compaction_keys() {
        let d = LogConfig::default();
        assert!(d.cleanup_policy.delete && !d.cleanup_policy.compact);
        assert_eq!(d.delete_retention_ms, 86_400_000);
        assert_eq!(d.min_cleanable_dirty_ratio, 0.5);
        assert_eq!(
            (d.min_compaction_lag_ms, d.max_compaction_lag_ms),
            (0, i64::MAX)
        );
        for (value, delete, compact) in [
            ("delete", true, false),
            ("compact", false, true),
            ("compact,delete", true, true),
            ("delete, compact", true, true),
        ] {
            let c = LogConfig::from_pairs([("cleanup.policy", value)]).unwrap();
            assert_eq!(
                c.cleanup_policy,
                CleanupPolicy { delete, compact },
                "{value}"
            );
        }
        let c = LogConfig::from_pairs([
            ("cleanup.policy", "compact"),
            ("min.cleanable.dirty.ratio", "0.25"),
            ("max.compaction.lag.ms", "5000"),
            ("segment.ms", "9000"),
        ])
        .unwrap();
        assert_eq!(c.min_cleanable_dirty_ratio, 0.25);
        assert_eq!(c.roll_ms(), 5000);
        for (key, value) in [
            ("cleanup.policy", "shred"),
            ("cleanup.policy", ""),
            ("delete.retention.ms", "-1"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("min.cleanable.dirty.ratio", "NaN"),
            ("min.compaction.lag.ms", "soon"),
            ("max.compaction.lag.ms", "0"),
        ] {
            let err = LogConfig::from_pairs([(key, value)]).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidConfig { key: k, value: v, .. } if k == key && v == value),
                "{key}={value}: {err}"
            );
        }
    }
}
