//! Topic-level log configuration, spelled as Kafka spells the topic keys.

use crate::error::{Error, Result};

/// Kafka's default `max.message.bytes` (1 MiB + record batch overhead).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

/// Which of Kafka's cleanup policies a topic has: `delete` (retention), `compact` (the
/// cleaner keeps the latest record per key), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            delete: true,
            compact: false,
        }
    }
}

impl CleanupPolicy {
    /// Kafka's list syntax: "delete", "compact", "compact,delete", "delete,compact".
    fn parse(key: &str, value: &str) -> Result<CleanupPolicy> {
        let mut policy = CleanupPolicy {
            delete: false,
            compact: false,
        };
        for item in value.split(',').map(str::trim) {
            match item {
                "delete" => policy.delete = true,
                "compact" => policy.compact = true,
                _ => return Err(bad(key, value, "must be delete, compact or compact,delete")),
            }
        }
        Ok(policy)
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
}

// The ratio is validated to lie in [0, 1], so it is never NaN and equality is total.
impl Eq for LogConfig {}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            log_append_time: false,
            cleanup_policy: CleanupPolicy::default(),
            delete_retention_ms: 24 * 3600 * 1000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
        }
    }
}

fn bad(key: &str, value: &str, reason: &str) -> Error {
    Error::InvalidConfig {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

fn parse_int(key: &str, value: &str, min: i64) -> Result<i64> {
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| bad(key, value, "not an integer"))?;
    if n < min {
        return Err(bad(key, value, &format!("must be at least {min}")));
    }
    Ok(n)
}

fn parse_ratio(key: &str, value: &str) -> Result<f64> {
    let ratio: f64 = value
        .trim()
        .parse()
        .map_err(|_| bad(key, value, "not a number"))?;
    if !(0.0..=1.0).contains(&ratio) {
        return Err(bad(key, value, "must be between 0 and 1"));
    }
    Ok(ratio)
}

impl LogConfig {
    /// Apply one topic-level key. Keys the storage layer does not use are ignored here (the
    /// broker validates the full key set); a bad value for a known key is an error naming it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            // Kafka's minimum segment.bytes is 14 bytes; anything smaller cannot hold a batch.
            "segment.bytes" => self.segment_bytes = parse_int(key, value, 14)? as u64,
            "segment.ms" => self.segment_ms = parse_int(key, value, 1)?,
            "segment.index.bytes" => self.segment_index_bytes = parse_int(key, value, 8)? as u64,
            "index.interval.bytes" => self.index_interval_bytes = parse_int(key, value, 0)? as u64,
            "retention.ms" => self.retention_ms = parse_int(key, value, -1)?,
            "retention.bytes" => self.retention_bytes = parse_int(key, value, -1)?,
            "flush.messages" => self.flush_messages = parse_int(key, value, 1)?,
            "flush.ms" => self.flush_ms = parse_int(key, value, 0)?,
            "max.message.bytes" => self.max_message_bytes = parse_int(key, value, 0)? as usize,
            "message.timestamp.type" => {
                self.log_append_time = match value {
                    "CreateTime" => false,
                    "LogAppendTime" => true,
                    _ => return Err(bad(key, value, "must be CreateTime or LogAppendTime")),
                }
            }
            "cleanup.policy" => self.cleanup_policy = CleanupPolicy::parse(key, value)?,
            "delete.retention.ms" => self.delete_retention_ms = parse_int(key, value, 0)?,
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = parse_ratio(key, value)?
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = parse_int(key, value, 0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = parse_int(key, value, 1)?,
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

    #[test]
    fn parses_kafka_keys_and_names_bad_values() {
        let c = LogConfig::from_pairs([("segment.bytes", "1024"), ("retention.ms", "-1")]).unwrap();
        assert_eq!(c.segment_bytes, 1024);
        assert_eq!(c.retention_ms, -1);
        let err = LogConfig::from_pairs([("retention.bytes", "lots")]).unwrap_err();
        assert!(err.to_string().contains("retention.bytes=lots"), "{err}");
        assert!(LogConfig::from_pairs([("segment.bytes", "3")]).is_err());
        assert!(LogConfig::from_pairs([("message.timestamp.type", "Now")]).is_err());
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
