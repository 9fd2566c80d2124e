"""Kafka 4.4.0's broker config keys against kafkalite's: DescribeConfigs on broker 1 with
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
    # Served by both, with different defaults.
    **_all(OWN_LOG_DIR, "log.dir"),
}

# Keys both serve whose type, read-only flag or sensitivity differ: key -> why.
FLAG_DIFFERENCES: dict[str, str] = {
    **_all(
        "Kafka 4.4.0 types it LIST (Kafka 4.1.1: STRING); kafkalite's schema keeps STRING, "
        "which its listener and log dir parsing read (a schema change for issue 35's "
        "follow-up)",
        "advertised.listeners",
        "controller.listener.names",
        "listeners",
        "log.dir",
        "log.dirs",
    ),
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
    assert not removed & theirs.keys(), "the list names a key Kafka 4.4.0 still has"
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
