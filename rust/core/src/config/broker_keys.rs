//! Every broker key kafkalite knows, once, sorted by name: the ones it acts on, the topic
//! defaults (`log.*` and friends, which carry no bounds of their own: the topic key's check
//! bounds them), and keys of Kafka's stock `server.properties`, replication and security that
//! it accepts without acting on yet (so they draw no "unknown config" warning).

use super::schema::Check::{Any, AtLeast, Between, NonEmpty, OneOf, OneOfAnyCase};
use super::schema::Default::{None as Null, SameAs, Value};
use super::schema::Type::{
    Boolean, Class, Double, Int, List, Long, Password, Short, String as Str,
};
use super::schema::Update::{ClusterWide, PerBroker, ReadOnly};
use super::schema::{Check, ConfigKey, Default, TopicSynonym, Type, Update, INT_MAX, LONG_MAX};

const fn key(
    name: &'static str,
    ty: Type,
    default: Default,
    check: Check,
    update: Update,
) -> ConfigKey {
    ConfigKey {
        name,
        ty,
        default,
        check,
        update,
        synonym: None,
    }
}

/// A broker key that sets a topic key's default: value × `unit` is the topic value. As in
/// Kafka 4.1 (`DynamicLogConfig`), only the key in the topic key's own unit may change
/// while the broker runs: `log.retention.ms` yes, `log.retention.hours` not.
const fn log(
    name: &'static str,
    ty: Type,
    default: Default,
    topic: &'static str,
    unit: i64,
) -> ConfigKey {
    ConfigKey {
        name,
        ty,
        default,
        check: Any,
        update: if unit == 1 { ClusterWide } else { ReadOnly },
        synonym: Some(TopicSynonym { topic, unit }),
    }
}

const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;
const SSL_CLIENT_AUTH: &[&str] = &["required", "requested", "none"];
const LOG_LEVELS: &[&str] = crate::logging::LEVEL_NAMES;
const MIGRATION_POLICIES: &[&str] = &["bidirectional", "upgrade", "downgrade", "disabled"];

#[rustfmt::skip]
pub const BROKER_KEYS: &[ConfigKey] = &[
    // Kafka 4.x (KRaft) no longer updates advertised listeners at runtime: 4.1.1 describes
    // the key as read-only, while `listeners` stays per-broker dynamic.
    key("advertised.listeners", Str, SameAs("listeners"), Any, ReadOnly),
    key("allow.everyone.if.no.acl.found", Boolean, Value("false"), Any, ReadOnly),
    key("authorizer.class.name", Str, Value(""), Any, ReadOnly),
    key("auto.create.topics.enable", Boolean, Value("true"), Any, ReadOnly),
    key("auto.leader.rebalance.enable", Boolean, Value("true"), Any, ReadOnly),
    key("broker.id", Int, SameAs("node.id"), AtLeast(0), ReadOnly),
    key("broker.rack", Str, Null, Any, ReadOnly),
    log("compression.gzip.level", Int, Value("-1"), "compression.gzip.level", 1),
    log("compression.lz4.level", Int, Value("9"), "compression.lz4.level", 1),
    log("compression.type", Str, Value("producer"), "compression.type", 1),
    log("compression.zstd.level", Int, Value("3"), "compression.zstd.level", 1),
    // Kafka's default, 10 minutes; a negative value never closes idle connections. Also
    // bounds how long one request frame may take to arrive (see net::connection).
    key("connections.max.idle.ms", Long, Value("600000"), Any, ReadOnly),
    // KIP-368: a SASL session's longest life before the client must re-authenticate;
    // 0 (Kafka's default) turns re-authentication off.
    key("connections.max.reauth.ms", Long, Value("0"), AtLeast(0), PerBroker),
    key("controlled.shutdown.enable", Boolean, Value("true"), Any, ReadOnly),
    key("controller.listener.names", Str, Null, Any, ReadOnly),
    key("controller.quorum.bootstrap.servers", List, Value(""), Any, ReadOnly),
    key("controller.quorum.voters", List, Value(""), Any, ReadOnly),
    key("default.replication.factor", Int, Value("1"), AtLeast(1), ReadOnly),
    key("delete.topic.enable", Boolean, Value("true"), Any, ReadOnly),
    // KIP-848's consumer groups: short assignor names, or Kafka's class names of them.
    key("group.consumer.assignors", List, Value("uniform,range"), NonEmpty("assignor"), ReadOnly),
    key("group.consumer.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.size", Int, Value(INT_MAX), AtLeast(1), ReadOnly),
    // KIP-848's online upgrade (classic -> consumer) and downgrade of non-empty groups.
    key("group.consumer.migration.policy", Str, Value("bidirectional"), OneOfAnyCase(MIGRATION_POLICIES), ReadOnly),
    key("group.consumer.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.consumer.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.consumer.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.initial.rebalance.delay.ms", Int, Value("3000"), AtLeast(0), ReadOnly),
    key("group.max.session.timeout.ms", Int, Value("1800000"), AtLeast(1), ReadOnly),
    key("group.max.size", Int, Value(INT_MAX), AtLeast(1), ReadOnly),
    key("group.min.session.timeout.ms", Int, Value("6000"), AtLeast(1), ReadOnly),
    // Share and streams groups: kafkalite has neither, but their group-level configs
    // (`share.*`, `streams.*` of a GROUP resource) are bounded by these, as in Kafka 4.1.
    key("group.share.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.share.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.share.max.record.lock.duration.ms", Int, Value("60000"), Between(30_000, 3_600_000), ReadOnly),
    key("group.share.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.share.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.share.min.record.lock.duration.ms", Int, Value("15000"), Between(1000, 30_000), ReadOnly),
    key("group.share.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.share.record.lock.duration.ms", Int, Value("30000"), Between(1000, 3_600_000), ReadOnly),
    key("group.share.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.streams.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.streams.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.streams.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.streams.max.standby.replicas", Int, Value("2"), AtLeast(0), ReadOnly),
    key("group.streams.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.streams.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.streams.num.standby.replicas", Int, Value("0"), AtLeast(0), ReadOnly),
    key("group.streams.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("inter.broker.listener.name", Str, Null, Any, ReadOnly),
    // kafkalite's own (Kafka has no cap): how far a produced batch may decompress before it
    // is refused as INVALID_RECORD; it bounds what one compression bomb costs.
    key("kafkalite.batch.decompressed.max.bytes", Long, Value("268435456"), AtLeast(1024), ReadOnly),
    // kafkalite's own: the log scrubber re-verifies every closed segment (CRC, headers,
    // offsets) this often, at most this fast; -1 turns it off. After an unclean shutdown
    // it starts at once.
    key("kafkalite.log.scrub.bytes.per.second", Long, Value("52428800"), AtLeast(1), ReadOnly),
    key("kafkalite.log.scrub.interval.ms", Long, Value("604800000"), AtLeast(-1), ReadOnly),
    // kafkalite's own (Kafka has no kTLS): hand TLS sessions to the kernel after the
    // handshake so Fetch keeps sendfile; also per listener (`listener.name.<l>.`).
    key("kafkalite.ssl.ktls.enable", Boolean, Value("true"), Any, ReadOnly),
    key("leader.imbalance.check.interval.seconds", Long, Value("300"), AtLeast(1), ReadOnly),
    key("leader.imbalance.per.broker.percentage", Int, Value("10"), AtLeast(0), ReadOnly),
    key("listener.security.protocol.map", Str, Value("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"), Any, PerBroker),
    // Parsed by the listener code, which owns the format; kafkalite binds loopback by default.
    key("listeners", Str, Value("PLAINTEXT://127.0.0.1:9092"), Any, PerBroker),
    key("log.cleaner.backoff.ms", Long, Value("15000"), AtLeast(1), ClusterWide),
    key("log.cleaner.dedupe.buffer.size", Long, Value("134217728"), Any, ClusterWide),
    log("log.cleaner.delete.retention.ms", Long, Value("86400000"), "delete.retention.ms", 1),
    key("log.cleaner.enable", Boolean, Value("true"), Any, ReadOnly),
    key("log.cleaner.io.buffer.load.factor", Double, Value("0.9"), Any, ClusterWide),
    key("log.cleaner.io.buffer.size", Int, Value("524288"), AtLeast(0), ClusterWide),
    key("log.cleaner.io.max.bytes.per.second", Double, Value("1.7976931348623157E308"), Any, ClusterWide),
    log("log.cleaner.max.compaction.lag.ms", Long, Value(LONG_MAX), "max.compaction.lag.ms", 1),
    log("log.cleaner.min.cleanable.ratio", Double, Value("0.5"), "min.cleanable.dirty.ratio", 1),
    log("log.cleaner.min.compaction.lag.ms", Long, Value("0"), "min.compaction.lag.ms", 1),
    key("log.cleaner.threads", Int, Value("1"), AtLeast(0), ClusterWide),
    log("log.cleanup.policy", List, Value("delete"), "cleanup.policy", 1),
    key("log.dir", Str, Value("/tmp/kafkalite-logs"), NonEmpty("directory"), ReadOnly),
    key("log.dirs", List, SameAs("log.dir"), NonEmpty("directory"), ReadOnly),
    log("log.flush.interval.messages", Long, Value(LONG_MAX), "flush.messages", 1),
    log("log.flush.interval.ms", Long, Null, "flush.ms", 1),
    log("log.index.interval.bytes", Int, Value("4096"), "index.interval.bytes", 1),
    log("log.index.size.max.bytes", Int, Value("10485760"), "segment.index.bytes", 1),
    // kafkalite's own (Kafka sets this in log4j's config): the broker's log threshold,
    // also `kafkalite broker --log-level`; one of crate::logging::LEVEL_NAMES.
    key("log.level", Str, Value("INFO"), OneOf(LOG_LEVELS), ReadOnly),
    log("log.local.retention.bytes", Long, Value("-2"), "local.retention.bytes", 1),
    log("log.local.retention.ms", Long, Value("-2"), "local.retention.ms", 1),
    // Kafka 4.0 (KIP-1030): records more than an hour ahead of the broker are refused.
    log("log.message.timestamp.after.max.ms", Long, Value("3600000"), "message.timestamp.after.max.ms", 1),
    log("log.message.timestamp.before.max.ms", Long, Value(LONG_MAX), "message.timestamp.before.max.ms", 1),
    log("log.message.timestamp.type", Str, Value("CreateTime"), "message.timestamp.type", 1),
    log("log.preallocate", Boolean, Value("false"), "preallocate", 1),
    log("log.retention.bytes", Long, Value("-1"), "retention.bytes", 1),
    key("log.retention.check.interval.ms", Long, Value("300000"), AtLeast(1), ReadOnly),
    log("log.retention.hours", Int, Value("168"), "retention.ms", HOUR_MS),
    log("log.retention.minutes", Int, Null, "retention.ms", MINUTE_MS),
    log("log.retention.ms", Long, Null, "retention.ms", 1),
    log("log.roll.hours", Int, Value("168"), "segment.ms", HOUR_MS),
    log("log.roll.jitter.hours", Int, Value("0"), "segment.jitter.ms", HOUR_MS),
    log("log.roll.jitter.ms", Long, Null, "segment.jitter.ms", 1),
    log("log.roll.ms", Long, Null, "segment.ms", 1),
    log("log.segment.bytes", Int, Value("1073741824"), "segment.bytes", 1),
    log("log.segment.delete.delay.ms", Long, Value("60000"), "file.delete.delay.ms", 1),
    // Connection limits (Kafka's ConnectionQuotas); `listener.name.<l>.max.connections` and
    // `listener.name.<l>.max.connection.creation.rate` bound one listener.
    key("max.connection.creation.rate", Int, Value(INT_MAX), AtLeast(0), ClusterWide),
    key("max.connections", Int, Value(INT_MAX), AtLeast(0), ClusterWide),
    key("max.connections.per.ip", Int, Value(INT_MAX), AtLeast(0), ClusterWide),
    key("max.connections.per.ip.overrides", Str, Value(""), Any, ClusterWide),
    log("message.max.bytes", Int, Value("1048588"), "max.message.bytes", 1),
    // kafkalite's own: host:port of the Prometheus endpoint; unset, none is served.
    key("metrics.listen", Str, Null, Any, ReadOnly),
    log("min.insync.replicas", Int, Value("1"), "min.insync.replicas", 1),
    // kafkalite's own default: one broker, so node 1 unless told otherwise.
    key("node.id", Int, Value("1"), AtLeast(0), ReadOnly),
    key("num.io.threads", Int, Value("8"), AtLeast(1), ClusterWide),
    key("num.network.threads", Int, Value("3"), AtLeast(1), ClusterWide),
    key("num.partitions", Int, Value("1"), AtLeast(1), ReadOnly),
    key("num.recovery.threads.per.data.dir", Int, Value("2"), AtLeast(1), ClusterWide),
    key("num.replica.fetchers", Int, Value("1"), AtLeast(1), ClusterWide),
    key("offset.metadata.max.bytes", Int, Value("4096"), AtLeast(0), ReadOnly),
    key("offsets.retention.check.interval.ms", Long, Value("600000"), AtLeast(1), ReadOnly),
    key("offsets.retention.minutes", Int, Value("10080"), AtLeast(1), ReadOnly),
    key("offsets.topic.num.partitions", Int, Value("50"), AtLeast(1), ReadOnly),
    key("offsets.topic.replication.factor", Short, Value("3"), AtLeast(1), ReadOnly),
    key("offsets.topic.segment.bytes", Int, Value("104857600"), AtLeast(1), ReadOnly),
    // Kafka's PasswordEncoder: how dynamic secrets are encrypted in ZooKeeper.
    key("password.encoder.cipher.algorithm", Str, Value("AES/CBC/PKCS5Padding"), OneOf(&["AES/CBC/PKCS5Padding"]), ReadOnly),
    key("password.encoder.iterations", Int, Value("4096"), AtLeast(1024), ReadOnly),
    key("password.encoder.key.length", Int, Value("128"), Between(128, 256), ReadOnly),
    key("password.encoder.keyfactory.algorithm", Str, Null, Any, ReadOnly),
    key("password.encoder.old.secret", Password, Null, Any, ReadOnly),
    key("password.encoder.secret", Password, Null, Any, ReadOnly),
    key("process.roles", List, Value(""), Any, ReadOnly),
    // The client quotas' rate windows (Kafka's ClientQuotaManagerConfig).
    key("quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly),
    key("quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly),
    key("replica.fetch.backoff.ms", Int, Value("1000"), AtLeast(0), ReadOnly),
    key("replica.fetch.max.bytes", Int, Value("1048576"), AtLeast(0), ReadOnly),
    key("replica.fetch.response.max.bytes", Int, Value("10485760"), AtLeast(0), ReadOnly),
    key("replica.fetch.wait.max.ms", Int, Value("500"), Any, ReadOnly),
    key("replica.lag.time.max.ms", Long, Value("30000"), Any, ReadOnly),
    key("replica.socket.timeout.ms", Int, Value("30000"), Any, ReadOnly),
    key("sasl.enabled.mechanisms", List, Value("GSSAPI"), Any, PerBroker),
    key("sasl.jaas.config", Password, Null, Any, PerBroker),
    key("sasl.kerberos.service.name", Str, Null, Any, PerBroker),
    key("sasl.mechanism.inter.broker.protocol", Str, Value("GSSAPI"), Any, PerBroker),
    key("sasl.oauthbearer.clock.skew.seconds", Int, Value("30"), AtLeast(0), PerBroker),
    key("sasl.oauthbearer.expected.audience", List, Value(""), Any, PerBroker),
    key("sasl.oauthbearer.expected.issuer", Str, Null, Any, PerBroker),
    key("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, Value("3600000"), AtLeast(0), PerBroker),
    key("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, Value("10000"), AtLeast(0), PerBroker),
    key("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, Value("100"), AtLeast(0), PerBroker),
    key("sasl.oauthbearer.jwks.endpoint.url", Str, Null, Any, PerBroker),
    key("sasl.oauthbearer.sub.claim.name", Str, Value("sub"), Any, PerBroker),
    key("sasl.server.callback.handler.class", Class, Null, Any, ReadOnly),
    // Kafka's cap on a frame before authentication (CVE-2022-34917).
    key("sasl.server.max.receive.size", Int, Value("524288"), AtLeast(64), ReadOnly),
    key("security.inter.broker.protocol", Str, Value("PLAINTEXT"), OneOf(&["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]), ReadOnly),
    key("socket.receive.buffer.bytes", Int, Value("102400"), Any, ReadOnly),
    // kafkalite needs room for a request header; Kafka's own minimum is 1.
    key("socket.request.max.bytes", Int, Value("104857600"), AtLeast(64), ReadOnly),
    key("socket.send.buffer.bytes", Int, Value("102400"), Any, ReadOnly),
    key("ssl.cipher.suites", List, Value(""), Any, PerBroker),
    key("ssl.client.auth", Str, Value("none"), OneOf(SSL_CLIENT_AUTH), PerBroker),
    key("ssl.enabled.protocols", List, Value("TLSv1.2,TLSv1.3"), Any, PerBroker),
    key("ssl.endpoint.identification.algorithm", Str, Value("https"), Any, PerBroker),
    key("ssl.key.password", Password, Null, Any, PerBroker),
    key("ssl.keystore.certificate.chain", Password, Null, Any, PerBroker),
    key("ssl.keystore.key", Password, Null, Any, PerBroker),
    key("ssl.keystore.location", Str, Null, Any, PerBroker),
    key("ssl.keystore.password", Password, Null, Any, PerBroker),
    key("ssl.keystore.type", Str, Value("JKS"), Any, PerBroker),
    key("ssl.principal.mapping.rules", Str, Value("DEFAULT"), Any, ReadOnly),
    key("ssl.protocol", Str, Value("TLSv1.3"), Any, PerBroker),
    key("ssl.truststore.certificates", Password, Null, Any, PerBroker),
    key("ssl.truststore.location", Str, Null, Any, PerBroker),
    key("ssl.truststore.password", Password, Null, Any, PerBroker),
    key("ssl.truststore.type", Str, Value("JKS"), Any, PerBroker),
    key("super.users", Str, Null, Any, ReadOnly),
    key("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, Value("10000"), AtLeast(1), ReadOnly),
    key("transaction.max.timeout.ms", Int, Value("900000"), AtLeast(1), ReadOnly),
    key("transaction.remove.expired.transaction.cleanup.interval.ms", Int, Value("3600000"), AtLeast(1), ReadOnly),
    key("transaction.state.log.min.isr", Int, Value("2"), AtLeast(1), ReadOnly),
    key("transaction.state.log.num.partitions", Int, Value("50"), AtLeast(1), ReadOnly),
    key("transaction.state.log.replication.factor", Short, Value("3"), AtLeast(1), ReadOnly),
    key("transaction.state.log.segment.bytes", Int, Value("104857600"), AtLeast(1), ReadOnly),
    key("transactional.id.expiration.ms", Int, Value("604800000"), AtLeast(1), ReadOnly),
    log("unclean.leader.election.enable", Boolean, Value("false"), "unclean.leader.election.enable", 1),
    key("zookeeper.connect", Str, Null, Any, ReadOnly),
    key("zookeeper.connection.timeout.ms", Int, Null, Any, ReadOnly),
    key("zookeeper.session.timeout.ms", Int, Value("18000"), Any, ReadOnly),
];
