//! Every broker key kafkalite knows, once, sorted by name: the ones it acts on, the topic
//! defaults (`log.*` and friends, which carry no bounds of their own: the topic key's check
//! bounds them), and keys of Kafka's stock `server.properties`, replication and security that
//! it accepts without acting on yet (so they draw no "unknown config" warning).

use super::schema::Check::{
    Any, AtLeast, Between, KnownClass, ListOf, NonEmpty, OneOf, OneOfAnyCase,
};
use super::schema::Default::{None as Null, SameAs, Value};
use super::schema::Type::{
    Boolean, Class, Double, Int, List, Long, Password, Short, String as Str,
};
use super::schema::Update::{ClusterWide, PerBroker, PerListener, ReadOnly};
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
/// Kafka's group types, the items `group.coordinator.rebalance.protocols` may name.
pub const GROUP_PROTOCOLS: &[&str] = &["consumer", "classic", "share", "streams"];
const LOG_LEVELS: &[&str] = crate::logging::LEVEL_NAMES;
/// The `replica.selector.class` kafkalite implements (KIP-392 fetch from follower).
pub const RACK_AWARE_REPLICA_SELECTOR: &str =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";
const MIGRATION_POLICIES: &[&str] = &["bidirectional", "upgrade", "downgrade", "disabled"];

/// Kafka's internal keys (`ConfigDef.defineInternal`): it validates and takes them by their
/// update mode, but DescribeConfigs does not list them. Sorted.
const INTERNAL: &[&str] = &[
    "controller.performance.always.log.threshold.ms",
    "controller.performance.sample.period.ms",
    "group.consumer.assignor.offload.enable",
    "group.consumer.regex.refresh.interval.ms",
    "group.share.assignor.offload.enable",
    "group.share.dlq.manager.class.name",
    "group.share.initialize.retry.interval.ms",
    "group.share.persister.class.name",
    "group.streams.acceptable.recovery.lag",
    "group.streams.assignor.offload.enable",
    "group.streams.max.warmup.replicas",
    "group.streams.min.task.offset.interval.ms",
    "group.streams.num.warmup.replicas",
    "group.streams.task.offset.interval.ms",
    "internal.metadata.delete.delay.millis",
    "internal.metadata.log.segment.bytes",
    "internal.metadata.max.batch.size.in.bytes",
    "log.initial.task.delay.ms",
    "producer.id.expiration.check.interval.ms",
    "remote.log.index.file.cache.ttl.ms",
    "remote.log.manager.task.retry.backoff.max.ms",
    "remote.log.manager.task.retry.backoff.ms",
    "remote.log.manager.task.retry.jitter",
    "server.max.startup.time.ms",
    "share.coordinator.cold.partition.snapshot.interval.ms",
    "share.coordinator.state.topic.prune.interval.ms",
    "unclean.leader.election.interval.ms",
    "unstable.api.versions.enable",
    "unstable.feature.versions.enable",
];

/// Whether Kafka keeps `name` out of DescribeConfigs (an internal key).
#[must_use]
pub fn is_internal(name: &str) -> bool {
    INTERNAL.binary_search(&name).is_ok()
}

/// Keys marked `// not read` came with Kafka 4.4.0's key set (listed from its KafkaConfig,
/// with its type, default, validator and update mode; see
/// python/kafkalite/conformance/broker_keys.py): features kafkalite does not have (KRaft's
/// quorum and metadata log, tiered storage, share and streams groups, delegation tokens,
/// the broker's own SASL login, JVM plug-in classes). They are validated as Kafka
/// validates them and, where dynamic, stored in the dynamic layers and described as Kafka
/// describes them; nothing reads them.
#[rustfmt::skip]
pub const BROKER_KEYS: &[ConfigKey] = &[
    // Kafka's Produce retries the AddPartitionsToTxn verification it sends another broker's
    // transaction coordinator while that one answers CONCURRENT_TRANSACTIONS. kafkalite
    // asks only its own coordinator, in process, under the partition's producer lock, and
    // has no request to retry: accepted and described, not read.
    key("add.partitions.to.txn.retry.backoff.max.ms", Int, Value("100"), AtLeast(0), ReadOnly),
    key("add.partitions.to.txn.retry.backoff.ms", Int, Value("20"), AtLeast(1), ReadOnly),
    // Kafka 4.x (KRaft) no longer updates advertised listeners at runtime: 4.1.1 describes
    // the key as read-only, while `listeners` stays per-broker dynamic.
    key("advertised.listeners", Str, SameAs("listeners"), Any, ReadOnly),
    key("allow.everyone.if.no.acl.found", Boolean, Value("false"), Any, ReadOnly),
    key("alter.config.policy.class.name", Class, Null, Any, ReadOnly), // not read
    // The rate windows of Kafka's replication throttles (between log dirs, and between
    // brokers below). kafkalite throttles no replication (the `*.replication.throttled.*`
    // topic keys are accepted, not acted on), so there is no rate to sample: not read.
    key("alter.log.dirs.replication.quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly),
    key("alter.log.dirs.replication.quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly),
    key("authorizer.class.name", Str, Value(""), Any, ReadOnly),
    key("auto.create.topics.enable", Boolean, Value("true"), Any, ReadOnly),
    key("auto.leader.rebalance.enable", Boolean, Value("true"), Any, ReadOnly),
    // Kafka's scheduler pool (retention, flushes, checkpoints). kafkalite's background work
    // runs as tasks on the broker's runtime, sized by its `threads`: not read.
    key("background.threads", Int, Value("10"), AtLeast(1), ClusterWide),
    key("broker.heartbeat.interval.ms", Int, Value("2000"), Any, ReadOnly), // not read
    key("broker.id", Int, SameAs("node.id"), AtLeast(0), ReadOnly),
    key("broker.rack", Str, Null, Any, ReadOnly),
    key("broker.session.timeout.ms", Int, Value("9000"), Any, ReadOnly), // not read
    key("client.quota.callback.class", Class, Null, Any, ReadOnly), // not read
    log("compression.gzip.level", Int, Value("-1"), "compression.gzip.level", 1),
    log("compression.lz4.level", Int, Value("9"), "compression.lz4.level", 1),
    log("compression.type", Str, Value("producer"), "compression.type", 1),
    log("compression.zstd.level", Int, Value("3"), "compression.zstd.level", 1),
    key("config.providers", List, Value(""), Any, ClusterWide), // not read
    // KIP-306: a failed authentication's answer (and the close after it) waits this long,
    // so a client guessing passwords cannot hammer the broker. Must stay below
    // connections.max.idle.ms (checked across keys, as Kafka does).
    key("connection.failed.authentication.delay.ms", Int, Value("100"), AtLeast(0), ReadOnly),
    // Kafka's default, 10 minutes; a negative value never closes idle connections. Also
    // bounds how long one request frame may take to arrive (see net::connection).
    key("connections.max.idle.ms", Long, Value("600000"), Any, ReadOnly),
    // KIP-368: a SASL session's longest life before the client must re-authenticate;
    // 0 (Kafka's default) turns re-authentication off.
    key("connections.max.reauth.ms", Long, Value("0"), AtLeast(0), PerListener),
    key("controlled.shutdown.enable", Boolean, Value("true"), Any, ReadOnly),
    key("controller.listener.names", Str, Null, Any, ReadOnly),
    key("controller.performance.always.log.threshold.ms", Long, Value("2000"), AtLeast(0), ReadOnly), // not read
    key("controller.performance.sample.period.ms", Long, Value("60000"), AtLeast(100), ReadOnly), // not read
    key("controller.quorum.append.linger.ms", Int, Value("25"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.auto.join.enable", Boolean, Value("false"), Any, ReadOnly), // not read
    key("controller.quorum.bootstrap.servers", List, Value(""), Any, ReadOnly),
    key("controller.quorum.election.backoff.max.ms", Int, Value("1000"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.election.timeout.ms", Int, Value("1000"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.fetch.max.bytes", Int, Value("1048576"), AtLeast(1), ReadOnly), // not read
    key("controller.quorum.fetch.snapshot.max.bytes", Int, Value("1048576"), AtLeast(1), ReadOnly), // not read
    key("controller.quorum.fetch.timeout.ms", Int, Value("2000"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.request.timeout.ms", Int, Value("2000"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.retry.backoff.ms", Int, Value("20"), AtLeast(0), ReadOnly), // not read
    key("controller.quorum.voters", List, Value(""), Any, ReadOnly),
    key("controller.quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly), // not read
    key("controller.quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly), // not read
    key("controller.socket.timeout.ms", Int, Value("30000"), Any, ReadOnly), // not read
    // Read by DescribeLogDirs v5 (IsCordoned); placement does not avoid cordoned dirs yet.
    key("cordoned.log.dirs", List, Value(""), Any, PerBroker),
    key("create.topic.policy.class.name", Class, Null, Any, ReadOnly), // not read
    key("default.replication.factor", Int, Value("1"), AtLeast(1), ReadOnly),
    key("delegation.token.expiry.check.interval.ms", Long, Value("3600000"), AtLeast(1), ReadOnly), // not read
    key("delegation.token.expiry.time.ms", Long, Value("86400000"), AtLeast(1), ReadOnly), // not read
    key("delegation.token.max.lifetime.ms", Long, Value("604800000"), AtLeast(1), ReadOnly), // not read
    key("delegation.token.secret.key", Password, Null, Any, ReadOnly), // not read
    // Kafka purges completed requests from a purgatory every this many requests; kafkalite
    // has no purgatories (a waiting request is a future, gone when it completes): not read.
    key("delete.records.purgatory.purge.interval.requests", Int, Value("1"), Any, ReadOnly),
    key("delete.topic.enable", Boolean, Value("true"), Any, ReadOnly),
    key("early.start.listeners", List, Null, Any, ReadOnly), // not read
    key("errors.deadletterqueue.auto.create.topics.enable", Boolean, Value("false"), Any, ClusterWide), // not read
    key("errors.deadletterqueue.topic.name.prefix", Str, Value("dlq."), Any, ClusterWide), // not read
    // KIP-541: the broker's own cap on a Fetch response, below whatever max_bytes the
    // request asks (the first batch still goes out whole, KIP-74).
    key("fetch.max.bytes", Int, Value("57671680"), AtLeast(1024), ReadOnly),
    key("fetch.purgatory.purge.interval.requests", Int, Value("1000"), Any, ReadOnly),
    key("follower.fetch.last.tiered.offset.enable", Boolean, Value("false"), Any, ClusterWide), // not read
    key("group.consumer.assignment.interval.ms", Int, Value("1000"), AtLeast(0), ClusterWide), // not read
    key("group.consumer.assignor.offload.enable", Boolean, Value("true"), Any, ClusterWide), // not read
    // KIP-848's consumer groups: short assignor names, or Kafka's class names of them.
    key("group.consumer.assignors", List, Value("uniform,range"), NonEmpty("assignor"), ReadOnly),
    key("group.consumer.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.assignment.interval.ms", Int, Value("15000"), AtLeast(0), ReadOnly), // not read
    key("group.consumer.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.consumer.max.size", Int, Value(INT_MAX), AtLeast(1), ReadOnly),
    // KIP-848's online upgrade (classic -> consumer) and downgrade of non-empty groups.
    key("group.consumer.migration.policy", Str, Value("bidirectional"), OneOfAnyCase(MIGRATION_POLICIES), ReadOnly),
    key("group.consumer.min.assignment.interval.ms", Int, Value("0"), AtLeast(0), ReadOnly), // not read
    key("group.consumer.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.consumer.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.consumer.regex.refresh.interval.ms", Int, Value("600000"), AtLeast(10000), ReadOnly), // not read
    key("group.consumer.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    // Kafka's coordinator runtime batches group writes for this long (Kafka 4.4.0's default
    // -1, 4.1.1's 5 ms), on its own threads; kafkalite writes each group change as one
    // batch at once, on the broker's runtime: not read.
    key("group.coordinator.append.linger.ms", Int, Value("-1"), AtLeast(-1), ReadOnly),
    key("group.coordinator.background.threads", Int, Value("2"), AtLeast(1), ReadOnly), // not read
    key("group.coordinator.cached.buffer.max.bytes", Int, Value("1048588"), AtLeast(524288), ClusterWide), // not read
    // The group protocols served: without `consumer`, ConsumerGroupHeartbeat and
    // ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka's do. `classic` cannot be
    // left out (checked across keys); share and streams groups are not built, so naming
    // them serves nothing more.
    key("group.coordinator.rebalance.protocols", List, Value("classic,consumer,streams"), ListOf(GROUP_PROTOCOLS), ReadOnly),
    key("group.coordinator.threads", Int, Value("4"), AtLeast(1), ReadOnly),
    key("group.initial.rebalance.delay.ms", Int, Value("3000"), AtLeast(0), ReadOnly),
    key("group.max.session.timeout.ms", Int, Value("1800000"), AtLeast(1), ReadOnly),
    key("group.max.size", Int, Value(INT_MAX), AtLeast(1), ReadOnly),
    key("group.min.session.timeout.ms", Int, Value("6000"), AtLeast(1), ReadOnly),
    key("group.share.assignment.interval.ms", Int, Value("1000"), AtLeast(0), ClusterWide), // not read
    key("group.share.assignor.offload.enable", Boolean, Value("true"), Any, ClusterWide), // not read
    key("group.share.assignors", List, Value("simple"), Any, ReadOnly), // not read
    key("group.share.delivery.count.limit", Int, Value("5"), Between(2, 10), ReadOnly),
    key("group.share.dlq.manager.class.name", Str, Value("org.apache.kafka.server.share.dlq.DefaultShareGroupDLQManager"), Any, ReadOnly), // not read
    // Share and streams groups: kafkalite has neither, but their group-level configs
    // (`share.*`, `streams.*` of a GROUP resource) are bounded by these, as in Kafka 4.1.
    key("group.share.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.share.initialize.retry.interval.ms", Int, Value("30000"), AtLeast(1), ReadOnly), // not read
    key("group.share.max.assignment.interval.ms", Int, Value("15000"), AtLeast(0), ReadOnly), // not read
    key("group.share.max.delivery.count.limit", Int, Value("10"), Between(5, 25), ReadOnly),
    key("group.share.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.share.max.partition.max.record.locks", Int, Value("4000"), Between(2000, 10000), ReadOnly),
    key("group.share.max.record.lock.duration.ms", Int, Value("60000"), Between(30_000, 3_600_000), ReadOnly),
    key("group.share.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.share.max.share.sessions", Int, Value("2000"), AtLeast(1), ReadOnly),
    key("group.share.max.size", Int, Value("200"), Between(1, 1000), ReadOnly), // not read
    key("group.share.min.assignment.interval.ms", Int, Value("0"), AtLeast(0), ReadOnly), // not read
    key("group.share.min.delivery.count.limit", Int, Value("2"), Between(2, 5), ReadOnly),
    key("group.share.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.share.min.partition.max.record.locks", Int, Value("100"), Between(100, 2000), ReadOnly),
    key("group.share.min.record.lock.duration.ms", Int, Value("15000"), Between(1000, 30_000), ReadOnly),
    key("group.share.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.share.partition.max.record.locks", Int, Value("2000"), Between(100, 10000), ReadOnly),
    key("group.share.persister.class.name", Str, Value("org.apache.kafka.server.share.persister.DefaultStatePersister"), Any, ReadOnly), // not read
    key("group.share.record.lock.duration.ms", Int, Value("30000"), Between(1000, 3_600_000), ReadOnly),
    key("group.share.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.streams.acceptable.recovery.lag", Long, Value("10000"), AtLeast(0), ReadOnly), // not read
    key("group.streams.assignment.interval.ms", Int, Value("1000"), AtLeast(0), ClusterWide), // not read
    key("group.streams.assignor.offload.enable", Boolean, Value("true"), Any, ClusterWide), // not read
    key("group.streams.assignors", List, Value("sticky"), Any, ReadOnly), // not read
    key("group.streams.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.streams.initial.rebalance.delay.ms", Int, Value("3000"), AtLeast(0), ReadOnly), // not read
    key("group.streams.max.assignment.interval.ms", Int, Value("15000"), AtLeast(0), ReadOnly), // not read
    key("group.streams.max.heartbeat.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly),
    key("group.streams.max.session.timeout.ms", Int, Value("60000"), AtLeast(1), ReadOnly),
    key("group.streams.max.size", Int, Value(INT_MAX), AtLeast(1), ReadOnly), // not read
    key("group.streams.max.standby.replicas", Int, Value("2"), AtLeast(0), ReadOnly),
    key("group.streams.max.warmup.replicas", Int, Value("20"), AtLeast(0), ReadOnly), // not read
    key("group.streams.min.assignment.interval.ms", Int, Value("0"), AtLeast(0), ReadOnly), // not read
    key("group.streams.min.heartbeat.interval.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("group.streams.min.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.streams.min.task.offset.interval.ms", Int, Value("15000"), AtLeast(1), ReadOnly), // not read
    key("group.streams.num.standby.replicas", Int, Value("0"), AtLeast(0), ReadOnly),
    key("group.streams.num.warmup.replicas", Int, Value("2"), AtLeast(0), ReadOnly), // not read
    key("group.streams.rack.aware.assignment.tags", List, Value(""), Any, ReadOnly), // not read
    key("group.streams.session.timeout.ms", Int, Value("45000"), AtLeast(1), ReadOnly),
    key("group.streams.task.offset.interval.ms", Int, Value("60000"), AtLeast(1), ReadOnly), // not read
    key("group.streams.topology.description.plugin.class", Class, Null, Any, ReadOnly), // not read
    key("initial.broker.registration.timeout.ms", Int, Value("60000"), Any, ReadOnly), // not read
    key("inter.broker.listener.name", Str, Null, Any, ReadOnly),
    key("internal.metadata.delete.delay.millis", Long, Value("60000"), Any, ReadOnly), // not read
    key("internal.metadata.log.segment.bytes", Int, Null, Any, ReadOnly), // not read
    key("internal.metadata.max.batch.size.in.bytes", Int, Value("8388608"), Any, ReadOnly), // not read
    // How often Kafka's JVM metrics reporters (`kafka.metrics.reporters`) poll; kafkalite
    // loads no reporters: not read.
    key("kafka.metrics.polling.interval.secs", Int, Value("10"), AtLeast(1), ReadOnly),
    key("kafka.metrics.reporters", List, Value(""), Any, ReadOnly), // not read
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
    // KRaft: how long a broker waits for the controller to take note of a failed log dir
    // before it shuts down. kafkalite's failed dir goes offline at once (its partitions
    // answer KAFKA_STORAGE_ERROR); there is no quorum to wait for: not read.
    key("log.dir.failure.timeout.ms", Long, Value("30000"), AtLeast(1), ReadOnly),
    key("log.dirs", Str, SameAs("log.dir"), NonEmpty("directory"), ReadOnly),
    log("log.flush.interval.messages", Long, Value(LONG_MAX), "flush.messages", 1),
    log("log.flush.interval.ms", Long, Null, "flush.ms", 1),
    // Kafka writes the recovery points, log start offsets and high watermarks of all logs
    // into one checkpoint file per dir on these schedules. kafkalite keeps a partition's
    // recovery point in its own dir, written when the log is flushed, and recovers log
    // start and high watermark from the log: not read.
    key("log.flush.offset.checkpoint.interval.ms", Int, Value("60000"), AtLeast(0), ReadOnly),
    // How often Kafka's flusher looks for logs due by `flush.ms`. kafkalite checks
    // `flush.ms` on each append instead: not read.
    key("log.flush.scheduler.interval.ms", Long, Value(LONG_MAX), Any, ReadOnly),
    key("log.flush.start.offset.checkpoint.interval.ms", Int, Value("60000"), AtLeast(0), ReadOnly),
    log("log.index.interval.bytes", Int, Value("4096"), "index.interval.bytes", 1),
    log("log.index.size.max.bytes", Int, Value("10485760"), "segment.index.bytes", 1),
    key("log.initial.task.delay.ms", Long, Value("30000"), AtLeast(0), ReadOnly), // not read
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
    key("log.remote.copy.lag.bytes", Long, Value("-1"), AtLeast(-1), ClusterWide), // not read
    key("log.remote.copy.lag.ms", Long, Value("0"), AtLeast(-1), ClusterWide), // not read
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
    key("max.decompressed.message.bytes", Int, Value("2147483639"), Between(1, 2147483639), ClusterWide), // not read
    // KIP-227 fetch sessions: kafkalite creates none (every Fetch is answered in full, as a
    // Kafka broker with 0 slots does), so there is no cache to size: not read.
    key("max.incremental.fetch.session.cache.slots", Int, Value("1000"), AtLeast(0), ReadOnly),
    // KIP-966's DescribeTopicPartitions: the most partitions one response lists, below the
    // request's own limit (the rest is named by the response's cursor).
    key("max.request.partition.size.limit", Int, Value("2000"), AtLeast(1), ReadOnly),
    log("message.max.bytes", Int, Value("1048588"), "max.message.bytes", 1),
    key("metadata.log.dir", Str, Null, Any, ReadOnly), // not read
    key("metadata.log.max.record.bytes.between.snapshots", Long, Value("20971520"), AtLeast(1), ReadOnly), // not read
    key("metadata.log.max.snapshot.interval.ms", Long, Value("3600000"), AtLeast(0), ReadOnly), // not read
    key("metadata.log.segment.bytes", Int, Value("1073741824"), AtLeast(8388608), ReadOnly), // not read
    key("metadata.log.segment.ms", Long, Value("604800000"), Any, ReadOnly), // not read
    key("metadata.max.idle.interval.ms", Int, Value("500"), AtLeast(0), ReadOnly), // not read
    key("metadata.max.retention.bytes", Long, Value("104857600"), Any, ReadOnly), // not read
    key("metadata.max.retention.ms", Long, Value("604800000"), Any, ReadOnly), // not read
    key("metric.reporters", List, Value("org.apache.kafka.common.metrics.JmxReporter"), Any, ClusterWide), // not read
    // kafkalite's own: host:port of the Prometheus endpoint; unset, none is served.
    key("metrics.listen", Str, Null, Any, ReadOnly),
    // Kafka's metrics sampling (rates over `num.samples` windows of `sample.window.ms`)
    // and the recording level of its sensors. kafkalite's Prometheus endpoint serves
    // counters and histograms, which Prometheus turns into rates itself: not read.
    key("metrics.num.samples", Int, Value("2"), AtLeast(1), ReadOnly),
    key("metrics.recording.level", Str, Value("INFO"), Any, ReadOnly),
    key("metrics.sample.window.ms", Long, Value("30000"), AtLeast(1), ReadOnly),
    log("min.insync.replicas", Int, Value("1"), "min.insync.replicas", 1),
    // kafkalite's own default: one broker, so node 1 unless told otherwise.
    key("node.id", Int, Value("1"), AtLeast(0), ReadOnly),
    key("num.io.threads", Int, Value("8"), AtLeast(1), ClusterWide),
    key("num.network.threads", Int, Value("3"), AtLeast(1), ClusterWide),
    key("num.partitions", Int, Value("1"), AtLeast(1), ReadOnly),
    key("num.recovery.threads.per.data.dir", Int, Value("2"), AtLeast(1), ClusterWide),
    // Kafka moves replicas between log dirs with this many fetcher threads (null: one per
    // dir); kafkalite copies each move on a thread of its own: not read.
    key("num.replica.alter.log.dirs.threads", Int, Null, Any, ReadOnly),
    key("num.replica.fetchers", Int, Value("1"), AtLeast(1), ClusterWide),
    key("offset.metadata.max.bytes", Int, Value("4096"), AtLeast(0), ReadOnly),
    // How long a group write (an offset commit, a group's state) waits for the ISR of its
    // `__consumer_offsets` partition before it fails (cluster mode).
    key("offsets.commit.timeout.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    // The read size when `__consumer_offsets` is loaded into the group cache at start (a
    // larger batch is still read whole).
    key("offsets.load.buffer.size", Int, Value("5242880"), AtLeast(1), ReadOnly),
    key("offsets.retention.check.interval.ms", Long, Value("600000"), AtLeast(1), ReadOnly),
    key("offsets.retention.minutes", Int, Value("10080"), AtLeast(1), ReadOnly),
    // The codec of the group coordinator's batches in `__consumer_offsets`, by Kafka's
    // compression id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    key("offsets.topic.compression.codec", Int, Value("0"), Between(0, 4), ReadOnly),
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
    key("principal.builder.class", Class, Value("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), Any, PerBroker), // not read
    key("process.roles", List, Value(""), Any, ReadOnly),
    key("producer.id.expiration.check.interval.ms", Int, Value("600000"), AtLeast(1), ReadOnly), // not read
    // An idempotent producer idle this long is forgotten by each partition (its next batch
    // starts it afresh, DescribeProducers no longer lists it); changes at once.
    key("producer.id.expiration.ms", Int, Value("86400000"), AtLeast(1), ClusterWide),
    key("producer.purgatory.purge.interval.requests", Int, Value("1000"), Any, ReadOnly),
    // Back-pressure on reading requests: the bytes of requests read and not yet answered
    // (-1 or 0: no bound; else at least socket.request.max.bytes, checked across keys).
    key("queued.max.request.bytes", Long, Value("-1"), Any, ReadOnly),
    // Kafka's queue between its network and I/O threads. kafkalite has no such queue: the
    // connection's task that reads a request handles it at once (one in flight per
    // connection), so requests waiting for a handler never outnumber the connections, and
    // the bytes above are what bounds reading: not read.
    key("queued.max.requests", Int, Value("500"), AtLeast(1), ReadOnly),
    // The client quotas' rate windows (Kafka's ClientQuotaManagerConfig).
    key("quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly),
    key("quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly),
    key("remote.fetch.max.wait.ms", Int, Value("500"), AtLeast(1), ClusterWide), // not read
    key("remote.list.offsets.request.timeout.ms", Long, Value("30000"), AtLeast(1), ClusterWide), // not read
    key("remote.log.index.file.cache.total.size.bytes", Long, Value("1073741824"), AtLeast(1), ClusterWide), // not read
    key("remote.log.index.file.cache.ttl.ms", Long, Value("900000"), AtLeast(-1), ReadOnly), // not read
    key("remote.log.manager.copier.thread.pool.size", Int, Value("10"), AtLeast(1), ClusterWide), // not read
    key("remote.log.manager.copy.max.bytes.per.second", Long, Value(LONG_MAX), AtLeast(1), ClusterWide), // not read
    key("remote.log.manager.copy.quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.copy.quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.expiration.thread.pool.size", Int, Value("10"), AtLeast(1), ClusterWide), // not read
    key("remote.log.manager.fetch.max.bytes.per.second", Long, Value(LONG_MAX), AtLeast(1), ClusterWide), // not read
    key("remote.log.manager.fetch.quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.fetch.quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.follower.thread.pool.size", Int, Value("2"), AtLeast(1), ClusterWide), // not read
    key("remote.log.manager.task.interval.ms", Long, Value("30000"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.task.retry.backoff.max.ms", Long, Value("30000"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.task.retry.backoff.ms", Long, Value("500"), AtLeast(1), ReadOnly), // not read
    key("remote.log.manager.task.retry.jitter", Double, Value("0.2"), Any, ReadOnly), // not read
    key("remote.log.manager.thread.pool.size", Int, Value("2"), AtLeast(1), ReadOnly), // not read
    key("remote.log.metadata.custom.metadata.max.bytes", Int, Value("128"), AtLeast(0), ReadOnly), // not read
    key("remote.log.metadata.manager.class.name", Str, Value("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"), Any, ReadOnly), // not read
    key("remote.log.metadata.manager.class.path", Str, Null, Any, ReadOnly), // not read
    key("remote.log.metadata.manager.impl.prefix", Str, Value("rlmm.config."), Any, ReadOnly), // not read
    key("remote.log.metadata.manager.listener.name", Str, Null, Any, ReadOnly), // not read
    key("remote.log.reader.max.pending.tasks", Int, Value("100"), AtLeast(1), ReadOnly), // not read
    key("remote.log.reader.threads", Int, Value("10"), AtLeast(1), ClusterWide), // not read
    key("remote.log.storage.manager.class.name", Str, Null, Any, ReadOnly), // not read
    key("remote.log.storage.manager.class.path", Str, Null, Any, ReadOnly), // not read
    key("remote.log.storage.manager.impl.prefix", Str, Value("rsm.config."), Any, ReadOnly), // not read
    key("remote.log.storage.system.enable", Boolean, Value("false"), Any, ReadOnly), // not read
    key("replica.fetch.backoff.ms", Int, Value("1000"), AtLeast(0), ReadOnly),
    key("replica.fetch.max.bytes", Int, Value("1048576"), AtLeast(0), ReadOnly),
    // A follower's Fetch asks for at least this many bytes (waiting up to
    // replica.fetch.wait.max.ms for them).
    key("replica.fetch.min.bytes", Int, Value("1"), Any, ReadOnly),
    key("replica.fetch.response.max.bytes", Int, Value("10485760"), AtLeast(0), ReadOnly),
    key("replica.fetch.wait.max.ms", Int, Value("500"), Any, ReadOnly),
    // See log.flush.offset.checkpoint.interval.ms: kafkalite writes no high watermark
    // checkpoint; a leader's high watermark comes back from its ISR's log ends: not read.
    key("replica.high.watermark.checkpoint.interval.ms", Long, Value("5000"), Any, ReadOnly),
    key("replica.lag.time.max.ms", Long, Value("30000"), Any, ReadOnly),
    // KIP-392: a leader names a same-rack replica for a consumer's `client.rack` to fetch
    // from (`replication::read_replica`); unset, consumers read from the leader.
    // A STRING in Kafka (its ReplicaManager loads the class at start).
    key("replica.selector.class", Str, Null, KnownClass(&[RACK_AWARE_REPLICA_SELECTOR]), ReadOnly),
    // SO_RCVBUF of a follower's connection to its leader (-1: the OS default).
    key("replica.socket.receive.buffer.bytes", Int, Value("65536"), Any, ReadOnly),
    key("replica.socket.timeout.ms", Int, Value("30000"), Any, ReadOnly),
    key("replication.quota.window.num", Int, Value("11"), AtLeast(1), ReadOnly),
    key("replication.quota.window.size.seconds", Int, Value("1"), AtLeast(1), ReadOnly),
    // The bound on the broker's own requests to other brokers (transaction markers) and
    // on a transaction log write waiting for its ISR.
    key("request.timeout.ms", Int, Value("30000"), Any, ReadOnly),
    key("sasl.client.callback.handler.class", Class, Null, Any, ReadOnly), // not read
    key("sasl.enabled.mechanisms", List, Value("GSSAPI"), Any, PerBroker),
    key("sasl.jaas.config", Password, Null, Any, PerBroker),
    key("sasl.kerberos.kinit.cmd", Str, Value("/usr/bin/kinit"), Any, PerBroker), // not read
    key("sasl.kerberos.min.time.before.relogin", Long, Value("60000"), Any, PerBroker), // not read
    key("sasl.kerberos.principal.to.local.rules", List, Value("DEFAULT"), Any, PerBroker), // not read
    key("sasl.kerberos.service.name", Str, Null, Any, PerBroker),
    key("sasl.kerberos.ticket.renew.jitter", Double, Value("0.05"), Any, PerBroker), // not read
    key("sasl.kerberos.ticket.renew.window.factor", Double, Value("0.8"), Any, PerBroker), // not read
    key("sasl.login.callback.handler.class", Class, Null, Any, ReadOnly), // not read
    key("sasl.login.class", Class, Null, Any, ReadOnly), // not read
    key("sasl.login.connect.timeout.ms", Int, Null, Any, ReadOnly), // not read
    key("sasl.login.read.timeout.ms", Int, Null, Any, ReadOnly), // not read
    key("sasl.login.refresh.buffer.seconds", Short, Value("300"), Any, PerBroker), // not read
    key("sasl.login.refresh.min.period.seconds", Short, Value("60"), Any, PerBroker), // not read
    key("sasl.login.refresh.window.factor", Double, Value("0.8"), Any, PerBroker), // not read
    key("sasl.login.refresh.window.jitter", Double, Value("0.05"), Any, PerBroker), // not read
    key("sasl.login.retry.backoff.max.ms", Long, Value("10000"), Any, ReadOnly), // not read
    key("sasl.login.retry.backoff.ms", Long, Value("100"), Any, ReadOnly), // not read
    key("sasl.mechanism.controller.protocol", Str, Value("GSSAPI"), Any, ReadOnly), // not read
    key("sasl.mechanism.inter.broker.protocol", Str, Value("GSSAPI"), Any, PerBroker),
    key("sasl.oauthbearer.allow.unverified.audience", Boolean, Value("false"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.allow.unverified.issuer", Boolean, Value("false"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.algorithm", Str, Value("RS256"), OneOfAnyCase(&["ES256", "RS256"]), ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.aud", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.exp.seconds", Int, Value("300"), Between(0, 86400), ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.iss", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.jti.include", Boolean, Value("false"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.nbf.seconds", Int, Value("60"), Between(0, 3600), ReadOnly), // not read
    key("sasl.oauthbearer.assertion.claim.sub", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.file", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.private.key.file", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.private.key.passphrase", Password, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.assertion.template.file", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.client.credentials.client.id", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.client.credentials.client.secret", Password, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.clock.skew.seconds", Int, Value("30"), AtLeast(0), PerListener),
    // Kafka's default is null (no audience checked), not an empty list.
    // Kafka 4.4.0 describes its default as the empty list (4.1.1: null); either means no
    // audience check (`security::sasl`).
    key("sasl.oauthbearer.expected.audience", List, Value(""), Any, PerListener),
    key("sasl.oauthbearer.expected.issuer", Str, Null, Any, PerListener),
    key("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, Value("3600000"), AtLeast(0), PerListener),
    key("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, Value("10000"), AtLeast(0), PerListener),
    key("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, Value("100"), AtLeast(0), PerListener),
    key("sasl.oauthbearer.jwks.endpoint.url", Str, Null, Any, PerListener),
    key("sasl.oauthbearer.jwt.retriever.class", Class, Value("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.jwt.validator.class", Class, Value("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.scope", Str, Null, Any, ReadOnly), // not read
    key("sasl.oauthbearer.scope.claim.name", Str, Value("scope"), Any, ReadOnly), // not read
    key("sasl.oauthbearer.sub.claim.name", Str, Value("sub"), Any, PerListener),
    key("sasl.oauthbearer.token.endpoint.url", Str, Null, Any, ReadOnly), // not read
    key("sasl.server.callback.handler.class", Class, Null, Any, ReadOnly),
    // Kafka's cap on a frame before authentication (CVE-2022-34917).
    key("sasl.server.max.receive.size", Int, Value("524288"), AtLeast(64), ReadOnly),
    key("security.inter.broker.protocol", Str, Value("PLAINTEXT"), OneOf(&["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]), ReadOnly),
    key("security.providers", Str, Null, Any, ReadOnly), // not read
    key("server.max.startup.time.ms", Long, Value(LONG_MAX), AtLeast(0), ReadOnly), // not read
    key("share.coordinator.append.linger.ms", Int, Value("-1"), AtLeast(-1), ReadOnly), // not read
    key("share.coordinator.cached.buffer.max.bytes", Int, Value("1048588"), AtLeast(524288), ClusterWide), // not read
    key("share.coordinator.cold.partition.snapshot.interval.ms", Int, Value("300000"), AtLeast(1), ReadOnly), // not read
    key("share.coordinator.load.buffer.size", Int, Value("5242880"), AtLeast(1), ReadOnly),
    key("share.coordinator.snapshot.update.records.per.snapshot", Int, Value("500"), Between(0, 500), ReadOnly), // not read
    key("share.coordinator.state.topic.compression.codec", Int, Value("0"), Any, ReadOnly), // not read
    key("share.coordinator.state.topic.min.isr", Short, Value("2"), AtLeast(1), ReadOnly), // not read
    key("share.coordinator.state.topic.num.partitions", Int, Value("50"), AtLeast(1), ReadOnly),
    key("share.coordinator.state.topic.prune.interval.ms", Int, Value("300000"), AtLeast(1), ReadOnly), // not read
    key("share.coordinator.state.topic.replication.factor", Short, Value("3"), AtLeast(1), ReadOnly), // not read
    key("share.coordinator.state.topic.segment.bytes", Int, Value("104857600"), AtLeast(1), ReadOnly),
    key("share.coordinator.threads", Int, Value("1"), AtLeast(1), ReadOnly), // not read
    key("share.coordinator.write.timeout.ms", Int, Value("5000"), AtLeast(1), ReadOnly),
    key("share.fetch.purgatory.purge.interval.requests", Int, Value("1000"), Any, ReadOnly), // not read
    // Connecting to another broker (a follower to its leader, transaction markers): the
    // first attempt may take `socket.connection.setup.timeout.ms`, each failure doubles it
    // up to the max (Kafka's exponential connection setup timeout, KIP-601).
    key("socket.connection.setup.timeout.max.ms", Long, Value("30000"), Any, ReadOnly),
    key("socket.connection.setup.timeout.ms", Long, Value("10000"), Any, ReadOnly),
    // The listen(2) backlog of every listener's socket.
    key("socket.listen.backlog.size", Int, Value("50"), AtLeast(1), ReadOnly),
    key("socket.receive.buffer.bytes", Int, Value("102400"), Any, ReadOnly),
    // kafkalite needs room for a request header; Kafka's own minimum is 1.
    key("socket.request.max.bytes", Int, Value("104857600"), AtLeast(64), ReadOnly),
    key("socket.send.buffer.bytes", Int, Value("102400"), Any, ReadOnly),
    // A keystore replaced while the broker runs must keep its certificate's subject and
    // subject alternative names, unless these allow a change (Kafka's SslFactory rule;
    // per listener with `listener.name.<l>.`).
    key("ssl.allow.dn.changes", Boolean, Value("false"), Any, ReadOnly),
    key("ssl.allow.san.changes", Boolean, Value("false"), Any, ReadOnly),
    key("ssl.cipher.suites", List, Value(""), Any, PerBroker),
    key("ssl.client.auth", Str, Value("none"), OneOf(SSL_CLIENT_AUTH), PerBroker),
    key("ssl.enabled.protocols", List, Value("TLSv1.2,TLSv1.3"), Any, PerBroker),
    key("ssl.endpoint.identification.algorithm", Str, Value("https"), Any, PerBroker),
    key("ssl.engine.factory.class", Class, Null, Any, PerBroker), // not read
    key("ssl.key.password", Password, Null, Any, PerBroker),
    key("ssl.keymanager.algorithm", Str, Value("SunX509"), Any, PerBroker), // not read
    key("ssl.keystore.certificate.chain", Password, Null, Any, PerBroker),
    key("ssl.keystore.key", Password, Null, Any, PerBroker),
    key("ssl.keystore.location", Str, Null, Any, PerBroker),
    key("ssl.keystore.password", Password, Null, Any, PerBroker),
    key("ssl.keystore.type", Str, Value("JKS"), Any, PerBroker),
    key("ssl.principal.mapping.rules", Str, Value("DEFAULT"), Any, ReadOnly),
    key("ssl.protocol", Str, Value("TLSv1.3"), Any, PerBroker),
    key("ssl.provider", Str, Null, Any, PerBroker), // not read
    key("ssl.secure.random.implementation", Str, Null, Any, PerBroker), // not read
    key("ssl.trustmanager.algorithm", Str, Value("PKIX"), Any, PerBroker), // not read
    key("ssl.truststore.certificates", Password, Null, Any, PerBroker),
    key("ssl.truststore.location", Str, Null, Any, PerBroker),
    key("ssl.truststore.password", Password, Null, Any, PerBroker),
    key("ssl.truststore.type", Str, Value("JKS"), Any, PerBroker),
    key("super.users", Str, Null, Any, ReadOnly),
    // KIP-714: the largest metrics payload a client may push (GetTelemetrySubscriptions
    // tells clients; a larger PushTelemetry is TELEMETRY_TOO_LARGE).
    key("telemetry.max.bytes", Int, Value("1048576"), AtLeast(1), ReadOnly),
    key("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, Value("10000"), AtLeast(1), ReadOnly),
    key("transaction.max.timeout.ms", Int, Value("900000"), AtLeast(1), ReadOnly),
    // KIP-890 part 1: a transactional batch (Produce v11 and older) is checked against the
    // coordinator's ongoing transaction before it is appended; false skips the check, as
    // Kafka does (v12 adds the partition to the transaction itself). Changes at once.
    key("transaction.partition.verification.enable", Boolean, Value("true"), Any, ClusterWide),
    key("transaction.remove.expired.transaction.cleanup.interval.ms", Int, Value("3600000"), AtLeast(1), ReadOnly),
    // As offsets.load.buffer.size, for `__transaction_state`.
    key("transaction.state.log.load.buffer.size", Int, Value("5242880"), AtLeast(1), ReadOnly),
    key("transaction.state.log.min.isr", Int, Value("2"), AtLeast(1), ReadOnly),
    key("transaction.state.log.num.partitions", Int, Value("50"), AtLeast(1), ReadOnly),
    key("transaction.state.log.replication.factor", Short, Value("3"), AtLeast(1), ReadOnly),
    key("transaction.state.log.segment.bytes", Int, Value("104857600"), AtLeast(1), ReadOnly),
    // KIP-939's two-phase commit: kafkalite advertises InitProducerId up to v5, which
    // cannot ask for it: accepted and described, not read.
    key("transaction.two.phase.commit.enable", Boolean, Value("false"), Any, ReadOnly),
    key("transactional.id.expiration.ms", Int, Value("604800000"), AtLeast(1), ReadOnly),
    log("unclean.leader.election.enable", Boolean, Value("false"), "unclean.leader.election.enable", 1),
    key("unclean.leader.election.interval.ms", Long, Value("300000"), AtLeast(1), ReadOnly), // not read
    key("unstable.api.versions.enable", Boolean, Value("false"), Any, ReadOnly), // not read
    key("unstable.feature.versions.enable", Boolean, Value("false"), Any, ReadOnly), // not read
    key("zookeeper.connect", Str, Null, Any, ReadOnly),
    key("zookeeper.connection.timeout.ms", Int, Null, Any, ReadOnly),
    // Kafka's ZooKeeper-era 18 s waited out JVM garbage-collection pauses kafkalite does
    // not have; 4 s replaces a hung broker within 6 s (a crashed one is fenced at once).
    key("zookeeper.session.timeout.ms", Int, Value("4000"), Any, ReadOnly),
];
