"""Kafka 4.1.1's broker config keys against kafkalite's: DescribeConfigs on broker 1 with
no key named (what `kafka-configs --describe --all --entity-type brokers` shows) on both
brokers, compared key by key and, where both answer a default, value by value.

Every difference is in `DIFFERENCES` below with its reason; a difference not listed
fails, and so does a listed one that no longer differs (the table stays true). The one
rule outside the table: keys in kafkalite's own `kafkalite.` namespace are kafkalite's."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from tests.broker import rawproto

DEFAULT_CONFIG = 5  # DescribeConfigs' config_source for a key nobody set
OWN = "kafkalite."

# --- The reviewed table: key -> why it differs. -----------------------------------------

KAFKALITE_ONLY = (
    "kafkalite's own key from before the kafkalite. namespace (the daemon's log level, the "
    "metrics endpoint); no Kafka counterpart"
)
ZOOKEEPER_MODE = (
    "kafkalite's cluster mode runs on ZooKeeper, so it keeps the ZooKeeper-mode keys Kafka "
    "4.0 removed with ZooKeeper: the connection, and the encoder of the dynamic passwords "
    "it stores in ZooKeeper (python/kafkalite/controller/password_encoder.py)"
)
CONTROLLER_REBALANCE = (
    "read by kafkalite's ZooKeeper controller for its automatic leader rebalance "
    "(python/kafkalite/controller/controller.py); Kafka 4.0 removed it with ZooKeeper"
)
AUTHORIZER_KEY = (
    "read by Kafka's StandardAuthorizer from the broker properties but not part of "
    "KafkaConfig, so Kafka does not describe it; kafkalite's authorizer key is in its schema"
)
KRAFT_ONLY = (
    "KRaft-only: a ZooKeeper-controlled cluster has no metadata quorum, metadata log, "
    "controller listener or broker heartbeats to configure"
)
SHARE_GROUPS = "share groups (KIP-932) are not built"
STREAMS_GROUPS = "streams groups (KIP-1071) are not built"
TIERED_STORAGE = "tiered storage (KIP-405) is not built"
DELEGATION_TOKENS = "delegation tokens are not built"
JVM_PLUGIN = (
    "a Java class (or JCA provider) Kafka loads into its JVM; a Rust broker has no such "
    "plug-in point"
)
SASL_CLIENT = (
    "the broker's own SASL login as a client (Kerberos, OAUTHBEARER client credentials or "
    "assertions): kafkalite brokers only verify SASL, they do not log in with it"
)
NOT_IN_SCHEMA = (
    "a tunable of Kafka's own machinery (threads, purgatories, checkpoints, sessions, "
    "metrics sampling, retries) that kafkalite does not read; not in its schema yet, "
    "issue 16"
)
NULL_DEFAULT = (
    "Kafka 4.1 describes the key's default as null (the hours/jitter synonym or the flush "
    "scheduler decides); kafkalite describes the effective value; schema defaults, issue 16"
)
EMPTY_DEFAULT = "Kafka's default is null, kafkalite's an empty string; schema defaults, issue 16"
OWN_LOG_DIR = (
    "kafkalite's default data dir is its own (/tmp/kafkalite-logs), so a broker started "
    "without log.dirs never opens a Kafka broker's default one"
)


def _all(reason: str, *keys: str) -> dict[str, str]:
    return dict.fromkeys(keys, reason)


DIFFERENCES: dict[str, str] = {
    # Served by kafkalite only.
    **_all(KAFKALITE_ONLY, "log.level", "metrics.listen"),
    **_all(ZOOKEEPER_MODE, "zookeeper.connect", "zookeeper.connection.timeout.ms"),
    **_all(ZOOKEEPER_MODE, "zookeeper.session.timeout.ms"),
    **_all(
        ZOOKEEPER_MODE,
        "password.encoder.cipher.algorithm",
        "password.encoder.iterations",
        "password.encoder.key.length",
        "password.encoder.keyfactory.algorithm",
        "password.encoder.old.secret",
        "password.encoder.secret",
    ),
    **_all(CONTROLLER_REBALANCE, "leader.imbalance.per.broker.percentage"),
    **_all(AUTHORIZER_KEY, "allow.everyone.if.no.acl.found"),
    # Served by Kafka only.
    **_all(
        KRAFT_ONLY,
        "broker.heartbeat.interval.ms",
        "broker.session.timeout.ms",
        "controller.quorum.append.linger.ms",
        "controller.quorum.election.backoff.max.ms",
        "controller.quorum.election.timeout.ms",
        "controller.quorum.fetch.timeout.ms",
        "controller.quorum.request.timeout.ms",
        "controller.quorum.retry.backoff.ms",
        "controller.quota.window.num",
        "controller.quota.window.size.seconds",
        "controller.socket.timeout.ms",
        "early.start.listeners",
        "initial.broker.registration.timeout.ms",
        "metadata.log.dir",
        "metadata.log.max.record.bytes.between.snapshots",
        "metadata.log.max.snapshot.interval.ms",
        "metadata.log.segment.bytes",
        "metadata.log.segment.ms",
        "metadata.max.idle.interval.ms",
        "metadata.max.retention.bytes",
        "metadata.max.retention.ms",
        "sasl.mechanism.controller.protocol",
    ),
    **_all(
        SHARE_GROUPS,
        "group.share.assignors",
        "group.share.delivery.count.limit",
        "group.share.max.share.sessions",
        "group.share.max.size",
        "group.share.partition.max.record.locks",
        "share.coordinator.append.linger.ms",
        "share.coordinator.load.buffer.size",
        "share.coordinator.snapshot.update.records.per.snapshot",
        "share.coordinator.state.topic.compression.codec",
        "share.coordinator.state.topic.min.isr",
        "share.coordinator.state.topic.num.partitions",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.segment.bytes",
        "share.coordinator.threads",
        "share.coordinator.write.timeout.ms",
        "share.fetch.purgatory.purge.interval.requests",
    ),
    **_all(
        STREAMS_GROUPS,
        "group.streams.max.size",
    ),
    **_all(
        TIERED_STORAGE,
        "remote.fetch.max.wait.ms",
        "remote.list.offsets.request.timeout.ms",
        "remote.log.index.file.cache.total.size.bytes",
        "remote.log.manager.copier.thread.pool.size",
        "remote.log.manager.copy.max.bytes.per.second",
        "remote.log.manager.copy.quota.window.num",
        "remote.log.manager.copy.quota.window.size.seconds",
        "remote.log.manager.expiration.thread.pool.size",
        "remote.log.manager.fetch.max.bytes.per.second",
        "remote.log.manager.fetch.quota.window.num",
        "remote.log.manager.fetch.quota.window.size.seconds",
        "remote.log.manager.task.interval.ms",
        "remote.log.manager.thread.pool.size",
        "remote.log.metadata.custom.metadata.max.bytes",
        "remote.log.metadata.manager.class.name",
        "remote.log.metadata.manager.class.path",
        "remote.log.metadata.manager.impl.prefix",
        "remote.log.metadata.manager.listener.name",
        "remote.log.reader.max.pending.tasks",
        "remote.log.reader.threads",
        "remote.log.storage.manager.class.name",
        "remote.log.storage.manager.class.path",
        "remote.log.storage.manager.impl.prefix",
        "remote.log.storage.system.enable",
    ),
    **_all(
        DELEGATION_TOKENS,
        "delegation.token.expiry.check.interval.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.max.lifetime.ms",
        "delegation.token.secret.key",
    ),
    **_all(
        JVM_PLUGIN,
        "alter.config.policy.class.name",
        "client.quota.callback.class",
        "create.topic.policy.class.name",
        "kafka.metrics.reporters",
        "metric.reporters",
        "principal.builder.class",
        "replica.selector.class",
        "sasl.client.callback.handler.class",
        "sasl.login.callback.handler.class",
        "sasl.login.class",
        "sasl.oauthbearer.jwt.retriever.class",
        "sasl.oauthbearer.jwt.validator.class",
        "security.providers",
        "ssl.engine.factory.class",
        "ssl.keymanager.algorithm",
        "ssl.provider",
        "ssl.secure.random.implementation",
        "ssl.trustmanager.algorithm",
    ),
    **_all(
        SASL_CLIENT,
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.retry.backoff.max.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.oauthbearer.assertion.algorithm",
        "sasl.oauthbearer.assertion.claim.aud",
        "sasl.oauthbearer.assertion.claim.exp.seconds",
        "sasl.oauthbearer.assertion.claim.iss",
        "sasl.oauthbearer.assertion.claim.jti.include",
        "sasl.oauthbearer.assertion.claim.nbf.seconds",
        "sasl.oauthbearer.assertion.claim.sub",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.assertion.private.key.file",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.template.file",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
    ),
    **_all(
        NOT_IN_SCHEMA,
        "add.partitions.to.txn.retry.backoff.max.ms",
        "add.partitions.to.txn.retry.backoff.ms",
        "alter.log.dirs.replication.quota.window.num",
        "alter.log.dirs.replication.quota.window.size.seconds",
        "background.threads",
        "connection.failed.authentication.delay.ms",
        "delete.records.purgatory.purge.interval.requests",
        "fetch.max.bytes",
        "fetch.purgatory.purge.interval.requests",
        "group.coordinator.append.linger.ms",
        "group.coordinator.rebalance.protocols",
        "group.coordinator.threads",
        "kafka.metrics.polling.interval.secs",
        "log.dir.failure.timeout.ms",
        "log.flush.offset.checkpoint.interval.ms",
        "log.flush.scheduler.interval.ms",
        "log.flush.start.offset.checkpoint.interval.ms",
        "max.incremental.fetch.session.cache.slots",
        "max.request.partition.size.limit",
        "metrics.num.samples",
        "metrics.recording.level",
        "metrics.sample.window.ms",
        "num.replica.alter.log.dirs.threads",
        "offsets.commit.timeout.ms",
        "offsets.load.buffer.size",
        "offsets.topic.compression.codec",
        "producer.id.expiration.ms",
        "producer.purgatory.purge.interval.requests",
        "queued.max.request.bytes",
        "queued.max.requests",
        "replica.fetch.min.bytes",
        "replica.high.watermark.checkpoint.interval.ms",
        "replica.socket.receive.buffer.bytes",
        "replication.quota.window.num",
        "replication.quota.window.size.seconds",
        "request.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms",
        "socket.listen.backlog.size",
        "ssl.allow.dn.changes",
        "ssl.allow.san.changes",
        "telemetry.max.bytes",
        "transaction.partition.verification.enable",
        "transaction.state.log.load.buffer.size",
        "transaction.two.phase.commit.enable",
    ),
    # Served by both, with different defaults.
    **_all(NULL_DEFAULT, "log.flush.interval.ms", "log.retention.ms", "log.roll.jitter.ms"),
    **_all(NULL_DEFAULT, "log.roll.ms"),
    **_all(EMPTY_DEFAULT, "sasl.oauthbearer.expected.audience"),
    **_all(OWN_LOG_DIR, "log.dir"),
}

# --------------------------------------------------------------------------------------


def broker_configs(bootstrap: str) -> dict[str, Any]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=4, resource_name="1", configuration_keys=None
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    response = rawproto.exchange(bootstrap, request, DescribeConfigsResponse, 4)
    (result,) = response.results
    assert result.error_code == 0, result.error_message
    return {c.name: c for c in result.configs}


@pytest.fixture(scope="module")
def both(brokers: tuple[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    return broker_configs(brokers[0]), broker_configs(brokers[1])


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, str]:
    """key -> what differs: served by one side only, or a different default."""
    out = {k: "kafkalite only" for k in ours.keys() - theirs.keys() if not k.startswith(OWN)}
    out |= {k: "Kafka only" for k in theirs.keys() - ours.keys()}
    for k in ours.keys() & theirs.keys():
        a, b = ours[k], theirs[k]
        # Keys either broker's own config file sets (listeners, log.dirs, ...) are not
        # defaults; only defaults are compared.
        defaults = a.config_source == DEFAULT_CONFIG and b.config_source == DEFAULT_CONFIG
        if defaults and a.value != b.value:
            out[k] = f"default {a.value!r} here, {b.value!r} in Kafka"
    return out


def test_every_broker_key_and_default_matches_kafka_or_is_listed(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, theirs = both
    assert len(theirs) > 250, "Kafka's key list looks truncated"
    found = differences(ours, theirs)
    unlisted = {k: why for k, why in found.items() if k not in DIFFERENCES}
    assert not unlisted, unlisted
    stale = sorted(DIFFERENCES.keys() - found.keys())
    assert not stale, f"listed but no longer different: {stale}"


def test_keys_kafka_4_removed_are_not_served(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, theirs = both
    # Removed in Kafka 4.0 with the old message formats (KIP-724), timestamp difference
    # (KIP-937), the inter-broker protocol version and ZooKeeper; the ZooKeeper keys
    # kafkalite still needs are in the table above, these it must not serve.
    removed = {
        "log.message.format.version",
        "log.message.downconversion.enable",
        "log.message.timestamp.difference.max.ms",
        "inter.broker.protocol.version",
        "broker.id.generation.enable",
        "reserved.broker.max.id",
        "zookeeper.set.acl",
        "zookeeper.ssl.client.enable",
        "control.plane.listener.name",
    }
    assert not removed & theirs.keys(), "the list names a key Kafka 4.1.1 still has"
    assert not removed & ours.keys()
