"""Every broker key Apache Kafka 4.4.0 defines, altered on a BROKER resource one at a time
(AlterConfigs and IncrementalAlterConfigs, this broker and the cluster default, a value of
the key's type, one that is not, one out of bounds, and the TLS and SASL keys under a
listener prefix): kafkalite answers each with Kafka's code and message, as recorded from a
live Kafka 4.4.0 in ``kafkalite/conformance/broker_keys-4.4.0.json``.

Regenerate the table and re-check against a live Kafka (needs java and mvn):
``python -m kafkalite.conformance.broker_keys record``. The differences that stay are in
``ALLOWED`` with their reasons; one that no longer differs fails too, so the list stays true.
"""

from __future__ import annotations

from fnmatch import fnmatch

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kafkalite import Broker
from kafkalite.conformance import broker_keys

TABLE = broker_keys.load_table()

KRAFT_CONTROLLER_LISTENER = (
    "Kafka's answer comes from its KRaft controller role: the reference node is a combined "
    "broker and controller, which must keep its CONTROLLER listener in `listeners` and in "
    "`listener.security.protocol.map`; a kafkalite node has no controller listener, so the "
    "same value is a valid listener set for it"
)

#: Probe-id globs (see broker_keys.Probe.id) -> why kafkalite's answer differs.
ALLOWED: dict[str, str] = {
    "* 1 listeners=*": KRAFT_CONTROLLER_LISTENER,
    "* 1 listener.security.protocol.map=*": KRAFT_CONTROLLER_LISTENER,
    "* log.cleaner.backoff.ms=-1": (
        "kafkalite's floor for the cleaner's backoff is 1 ms, Kafka's 0: a 0 ms backoff "
        "busy-loops the cleaner thread (tests/broker/test_log_maintenance.py refuses it at "
        "start)"
    ),
    "* log.index.size.max.bytes=3": (
        "kafkalite's index floor is 8 bytes, one offset index entry (the topic key "
        "segment.index.bytes bounds it); Kafka takes 4, an index that can hold no entry"
    ),
    "* log.segment.bytes=1048575": (
        "Kafka 4.0 (KIP-1030) raised the broker default's floor to 1 MiB; kafkalite keeps the "
        "floor of one batch (the topic key segment.bytes bounds it), so small deployments "
        "and the test suite can roll small segments"
    ),
}


def allowed(probe_id: str) -> str | None:
    return next((pattern for pattern in ALLOWED if fnmatch(probe_id, pattern)), None)


def test_every_kafka_4_4_broker_key_is_answered_as_kafka_answers(
    kafkalite_broker: Broker,
) -> None:
    keys = broker_keys.keys_of(TABLE)
    assert TABLE["kafka_version"] == "4.4.0" and len(keys) > 350, "the table looks truncated"
    got = broker_keys.answers(kafkalite_broker.bootstrap_servers, keys)
    assert len(got) == len(TABLE["answers"]), "the probes are not the table's"
    found = broker_keys.differences(TABLE, got)
    unlisted = {p: d for p, d in found.items() if allowed(p) is None}
    assert not unlisted, "\n".join(
        f"{p}: Kafka {w}, kafkalite {h}" for p, (w, h) in unlisted.items()
    )
    used = {allowed(p) for p in found}
    stale = sorted(ALLOWED.keys() - used)
    assert not stale, f"allowed but no longer different: {stale}"


def describe(client: AdminClient, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.BROKER, name)
    return client.describe_configs([resource])[resource].result(timeout=20)


def test_keys_new_to_kafkalite_are_stored_where_kafka_stores_them(
    kafkalite_broker: Broker,
) -> None:
    # librdkafka's test 0081 sets this one per broker (Kafka 4.1.1 and 4.4.0 take it).
    client = AdminClient({"bootstrap.servers": kafkalite_broker.bootstrap_servers})
    key = "sasl.kerberos.min.time.before.relogin"
    entry = ConfigEntry(key, "61000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])
    client.incremental_alter_configs([resource])[resource].result(timeout=20)
    got = describe(client, "1")[key]
    assert (got.value, ConfigSource(got.source)) == ("61000", ConfigSource.DYNAMIC_BROKER_CONFIG)

    # A cluster-wide key new in Kafka 4.4, at the cluster default (librdkafka cannot name
    # the default entity: the probe's own AlterConfigs does, for real this time).
    key = "group.consumer.assignment.interval.ms"
    probe = broker_keys.Probe("incremental", "", key, "2500")
    with broker_keys.Prober(kafkalite_broker.bootstrap_servers) as prober:
        assert prober.ask(probe, validate_only=False) == (0, None)
        bad = broker_keys.Probe("incremental", "", key, "-1")
        assert prober.ask(bad, validate_only=False) == (
            42,
            f"Invalid value -1 for configuration {key}: Value must be at least 0",
        )
    got = describe(client, "1")[key]
    assert (got.value, ConfigSource(got.source)) == (
        "2500",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
