//! The coordinator's settings, read from Kafka's broker keys (with Kafka's defaults).

use std::collections::BTreeMap;

use crate::config::ConfigError;

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
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: i64,
    /// `offsets.retention.minutes`, in ms.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            initial_rebalance_delay_ms: 3000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            max_size: i32::MAX as usize,
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            offsets_retention_ms: 10_080 * 60_000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
        }
    }
}

fn number(raw: &BTreeMap<String, String>, key: &str, min: i64) -> Result<Option<i64>, ConfigError> {
    let Some(value) = raw.get(key) else {
        return Ok(None);
    };
    let bad = |reason: String| ConfigError {
        key: key.to_string(),
        value: value.clone(),
        reason,
    };
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| bad("not a number".into()))?;
    if n < min {
        return Err(bad(format!("must be at least {min}")));
    }
    Ok(Some(n))
}

impl GroupConfig {
    /// From the broker's keys as given (`BrokerConfig::raw`); bad values name the key.
    pub fn from_raw(raw: &BTreeMap<String, String>) -> Result<GroupConfig, ConfigError> {
        let mut c = GroupConfig::default();
        let clamp_i32 = |n: i64| n.min(i64::from(i32::MAX)) as i32;
        if let Some(n) = number(raw, "group.initial.rebalance.delay.ms", 0)? {
            c.initial_rebalance_delay_ms = n;
        }
        if let Some(n) = number(raw, "group.min.session.timeout.ms", 1)? {
            c.min_session_timeout_ms = clamp_i32(n);
        }
        if let Some(n) = number(raw, "group.max.session.timeout.ms", 1)? {
            c.max_session_timeout_ms = clamp_i32(n);
        }
        if let Some(n) = number(raw, "group.max.size", 1)? {
            c.max_size = n as usize;
        }
        if let Some(n) = number(raw, "offsets.topic.num.partitions", 1)? {
            c.offsets_topic_partitions = clamp_i32(n);
        }
        if let Some(n) = number(raw, "offsets.topic.segment.bytes", 1)? {
            c.offsets_topic_segment_bytes = n;
        }
        if let Some(n) = number(raw, "offsets.retention.minutes", 1)? {
            c.offsets_retention_ms = n.saturating_mul(60_000);
        }
        if let Some(n) = number(raw, "offsets.retention.check.interval.ms", 1)? {
            c.offsets_retention_check_interval_ms = n;
        }
        if let Some(n) = number(raw, "offset.metadata.max.bytes", 0)? {
            c.offset_metadata_max_bytes = n as usize;
        }
        if c.min_session_timeout_ms > c.max_session_timeout_ms {
            return Err(ConfigError {
                key: "group.min.session.timeout.ms".into(),
                value: c.min_session_timeout_ms.to_string(),
                reason: "must not exceed group.max.session.timeout.ms".into(),
            });
        }
        Ok(c)
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
        let bad = BTreeMap::from([("offsets.topic.num.partitions".to_string(), "0".to_string())]);
        assert_eq!(
            GroupConfig::from_raw(&bad).unwrap_err().key,
            "offsets.topic.num.partitions"
        );
    }
}
