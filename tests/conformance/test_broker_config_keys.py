"""Kafka 4.1.1's broker config keys against kafkalite's: DescribeConfigs on broker 1 with
no key named (what `kafka-configs --describe --all --entity-type brokers` shows) on both
brokers, compared key by key and, where both answer a default, value by value; and for
every key both serve, its type, its read-only flag (whether `kafka-configs --alter` may
change it without a restart) and its sensitivity.

Every difference is in `DIFFERENCES` (or `FLAG_DIFFERENCES`) below with its reason; a
difference not listed fails, and so does a listed one that no longer differs (the tables
stay true). The one rule outside the tables: keys in kafkalite's own `kafkalite.`
namespace are kafkalite's."""

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
    "KIP-848's policy for converting groups between the classic and consumer protocols; "
    "not in kafkalite's schema yet, issue 16"
)
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
    # Served by both, with different defaults.
    **_all(OWN_LOG_DIR, "log.dir"),
}

# Keys both serve whose type, read-only flag or sensitivity differ: key -> why.
FLAG_DIFFERENCES: dict[str, str] = {
    "super.users": (
        "read by Kafka's StandardAuthorizer, not KafkaConfig: Kafka describes it as a key it "
        "does not know (no type, and so sensitive); kafkalite's schema has it"
    ),
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


def test_every_shared_keys_type_read_only_flag_and_sensitivity_match_kafka_or_are_listed(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, theirs = both
    found = {}
    for k in ours.keys() & theirs.keys():
        a, b = ours[k], theirs[k]
        flags = [
            (what, x, y)
            for what, x, y in (
                ("type", a.config_type, b.config_type),
                ("read_only", a.read_only, b.read_only),
                ("sensitive", a.is_sensitive, b.is_sensitive),
            )
            if x != y
        ]
        if flags:
            found[k] = ", ".join(f"{what} {x!r} here, {y!r} in Kafka" for what, x, y in flags)
    unlisted = {k: why for k, why in found.items() if k not in FLAG_DIFFERENCES}
    assert not unlisted, unlisted
    stale = sorted(FLAG_DIFFERENCES.keys() - found.keys())
    assert not stale, f"listed but no longer different: {stale}"
