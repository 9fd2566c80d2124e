//! Topic-level log configuration, spelled as Kafka spells the topic keys.

use crate::error::{Error, Result};

/// Kafka's default `max.message.bytes` (1 MiB + record batch overhead).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

#[derive(Clone, Debug, PartialEq, Eq)]
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
}

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
            _ => {}
        }
        Ok(())
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
}
