//! Kafka 4.1's topic keys, once, sorted by name (Kafka 4.0 removed message.format.version,
//! message.downconversion.enable and message.timestamp.difference.max.ms). Their bounds
//! live here; most defaults come from the broker key that sets them
//! (`Default::FromBroker`), as in Kafka.

use super::schema::Check::{
    Any, AtLeast, Between, BetweenOr, ListOf, OneOf, Ratio, Replicas, Unsupported,
};
use super::schema::Default::{FromBroker, Value};
use super::schema::Type::{Boolean, Double, Int, List, Long, String as Str};
use super::schema::Update::ClusterWide;
use super::schema::{Check, ConfigKey, Default, Type, LONG_MAX};

const fn key(name: &'static str, ty: Type, default: Default, check: Check) -> ConfigKey {
    ConfigKey {
        name,
        ty,
        default,
        check,
        update: ClusterWide,
        synonym: None,
    }
}

/// In Kafka's order, which its "String must be one of: compact, delete" lists.
pub const CLEANUP_POLICIES: &[&str] = &["compact", "delete"];
pub const CODECS: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
pub const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

#[rustfmt::skip]
pub const TOPIC_KEYS: &[ConfigKey] = &[
    key("cleanup.policy", List, FromBroker, ListOf(CLEANUP_POLICIES)),
    key("compression.gzip.level", Int, FromBroker, BetweenOr(1, 9, -1)),
    key("compression.lz4.level", Int, FromBroker, Between(1, 17)),
    key("compression.type", Str, FromBroker, OneOf(CODECS)),
    key("compression.zstd.level", Int, FromBroker, Between(-131_072, 22)),
    key("delete.retention.ms", Long, FromBroker, AtLeast(0)),
    key("file.delete.delay.ms", Long, FromBroker, AtLeast(0)),
    key("flush.messages", Long, FromBroker, AtLeast(1)),
    // Kafka's log.flush.interval.ms has no default; the topic key has its own.
    key("flush.ms", Long, Value(LONG_MAX), AtLeast(0)),
    key("follower.replication.throttled.replicas", List, Value(""), Replicas),
    key("index.interval.bytes", Int, FromBroker, AtLeast(0)),
    key("leader.replication.throttled.replicas", List, Value(""), Replicas),
    key("local.retention.bytes", Long, FromBroker, AtLeast(-2)),
    key("local.retention.ms", Long, FromBroker, AtLeast(-2)),
    key("max.compaction.lag.ms", Long, FromBroker, AtLeast(1)),
    key("max.message.bytes", Int, FromBroker, AtLeast(0)),
    key("message.timestamp.after.max.ms", Long, FromBroker, AtLeast(0)),
    key("message.timestamp.before.max.ms", Long, FromBroker, AtLeast(0)),
    key("message.timestamp.type", Str, FromBroker, OneOf(TIMESTAMP_TYPES)),
    key("min.cleanable.dirty.ratio", Double, FromBroker, Ratio),
    key("min.compaction.lag.ms", Long, FromBroker, AtLeast(0)),
    key("min.insync.replicas", Int, FromBroker, AtLeast(1)),
    key("preallocate", Boolean, FromBroker, Any),
    key("remote.storage.enable", Boolean, Value("false"), Unsupported("tiered storage is not available on this broker")),
    key("retention.bytes", Long, FromBroker, AtLeast(-1)),
    key("retention.ms", Long, FromBroker, AtLeast(-1)),
    // The storage layer needs room for at least one batch and one index entry.
    key("segment.bytes", Int, FromBroker, AtLeast(14)),
    key("segment.index.bytes", Int, FromBroker, AtLeast(8)),
    key("segment.jitter.ms", Long, FromBroker, AtLeast(0)),
    key("segment.ms", Long, FromBroker, AtLeast(1)),
    key("unclean.leader.election.enable", Boolean, FromBroker, Any),
];
