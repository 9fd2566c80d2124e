"""KIP-848 consumer groups (group.protocol=consumer) with real clients: Kafka's Java consumer
and confluent-kafka (librdkafka) each run a 3-member group over 12 partitions that consumes
every record exactly once while a member joins and another leaves; the admin views
(ListGroups type and state, ConsumerGroupDescribe) show the group."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kafkalite import Broker
from tests.groups.conftest import GROUP_CONFIG
from tests.groups.members import Member, create_topic, produce, values_of, wait_for

PARTITIONS = 12
BATCH = 600
# Members learn of partitions another member released at their next heartbeat. Kafka
# refuses to start with an interval or timeout outside its .min/.max keys, so those move too.
CONSUMER_CONFIG = {
    **GROUP_CONFIG,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.session.timeout.ms": 10000,
    "group.consumer.session.timeout.ms": 10000,
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=CONSUMER_CONFIG) as b:
        yield b


def _covers_all(members: list[Member]) -> bool:
    owned = [m.assignment for m in members]
    return all(owned) and sorted(p for o in owned for p in o) == list(range(PARTITIONS))


def _kafka_consumer_groups_tool_shows(bs: str, group: str, topic: str, members: int) -> None:
    """Kafka's own kafka-consumer-groups lists the group with its type and describes it."""
    from kafkalite.bench import kafka_ref

    libs = kafka_ref.classpath(kafka_ref.ensure_jars())
    tool = [
        "java",
        "-Xmx256m",
        "-cp",
        libs,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    ]
    listed = subprocess.run(
        [*tool, "--bootstrap-server", bs, "--list", "--type"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert re.search(rf"^{re.escape(group)}\s+Consumer\b", listed.stdout, re.M), listed
    described = subprocess.run(
        [*tool, "--bootstrap-server", bs, "--describe", "--group", group, "--members"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [line for line in described.stdout.splitlines() if line.startswith(group)]
    assert len(rows) == members, described


def _member(broker: Broker, topic: str, group: str, client: str) -> Member:
    if client == "java":
        return Member(broker.bootstrap_servers, topic, group, "java")
    return Member(broker.bootstrap_servers, topic, group, "confluent", protocol="consumer")


@pytest.mark.parametrize("client", ["java", "confluent"])
def test_every_record_once_through_a_join_and_a_leave(broker: Broker, client: str) -> None:
    if client == "java" and shutil.which("java") is None:
        pytest.skip("java is not installed")
    bs = broker.bootstrap_servers
    topic, group = f"kip848-{client}", f"kip848-{client}-group"
    create_topic(bs, topic, PARTITIONS)
    sent = produce(bs, topic, BATCH, partitions=PARTITIONS)
    members = [_member(broker, topic, group, client) for _ in range(2)]
    try:
        wait_for(lambda: _covers_all(members), 60, "two members splitting 12 partitions")
        wait_for(lambda: len(values_of(members)) >= BATCH // 2, 30, "records consumed")

        # A third member joins: partitions move to it only once their owner revoked them.
        members.append(_member(broker, topic, group, client))
        wait_for(lambda: _covers_all(members), 60, "three members splitting 12 partitions")
        sent |= produce(bs, topic, BATCH, start=BATCH, partitions=PARTITIONS)

        # One leaves (SIGTERM: the client closes and leaves with epoch -1).
        leaving = members.pop(0)
        leaving.stop()
        assert leaving.of("closed"), "the leaving member closed cleanly"
        wait_for(lambda: _covers_all(members), 30, "two members taking over")
        sent |= produce(bs, topic, BATCH, start=2 * BATCH, partitions=PARTITIONS)

        everyone = [leaving, *members]
        wait_for(lambda: set(values_of(everyone)) >= sent, 60, "every record consumed")

        admin = AdminClient({"bootstrap.servers": bs})
        listed = admin.list_consumer_groups().result(10)
        mine = [g for g in listed.valid if g.group_id == group]
        assert mine and mine[0].type.name == "CONSUMER", mine
        assert mine[0].state.name == "STABLE", mine
        if client == "java":
            _kafka_consumer_groups_tool_shows(bs, group, topic, len(members))
        for m in members:
            m.stop()
        seen = Counter(values_of(everyone))
        duplicates = {v: n for v, n in seen.items() if n > 1}
        errors = [e["error"] for m in everyone for e in m.of("error")]
        assert not duplicates, (
            f"{len(duplicates)} records consumed twice: {list(duplicates)[:5]}; errors: {errors}"
        )
        assert set(seen) == sent
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.kill()


def test_a_regex_subscription_picks_up_a_topic_created_later(broker: Broker) -> None:
    """librdkafka sends a `^` subscription as SubscribedTopicRegex: the coordinator matches
    it, and a topic created afterwards reaches the assignment at the next heartbeat."""
    from confluent_kafka import Consumer

    bs = broker.bootstrap_servers
    create_topic(bs, "kip848-re-a", 2)
    sent = produce(bs, "kip848-re-a", 20, partitions=2)
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "kip848-regex",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    seen: list[str] = []

    def consumed(expected: set[str]) -> bool:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(msg.value().decode())
        return set(seen) >= expected

    try:
        consumer.subscribe(["^kip848-re-.*"])
        wait_for(lambda: consumed(sent), 30, "records of the topic the regex matched")
        create_topic(bs, "kip848-re-b", 3)
        sent |= produce(bs, "kip848-re-b", 30, start=20, partitions=3)
        wait_for(lambda: consumed(sent), 30, "records of the topic created later")
        assert sorted(seen) == sorted(sent)
        admin = AdminClient({"bootstrap.servers": bs})
        described = admin.describe_consumer_groups(["kip848-regex"])["kip848-regex"].result(10)
        (member,) = described.members
        assert {tp.topic for tp in member.assignment.topic_partitions} == {
            "kip848-re-a",
            "kip848-re-b",
        }
    finally:
        consumer.close()


def test_a_regex_resolves_internal_topics_too(broker: Broker) -> None:
    """The coordinator matches a group's regex against every topic, internal ones included,
    as Kafka does (its metadata image has them): a regex that quotes `__consumer_offsets`
    is assigned its partitions (franz-go's Test848RegexBrokerResolves)."""
    from confluent_kafka import Consumer

    bs = broker.bootstrap_servers
    create_topic(bs, "kip848-int-a", 1)
    admin = AdminClient({"bootstrap.servers": bs})
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "kip848-internal",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )

    def assigned() -> set[str]:
        consumer.poll(0.2)
        groups = admin.describe_consumer_groups(["kip848-internal"])
        members = groups["kip848-internal"].result(10).members
        return {tp.topic for m in members for tp in m.assignment.topic_partitions}

    try:
        # The group's coordinator creates __consumer_offsets before the regex is matched.
        consumer.subscribe([r"^(kip848-int-.*|__consumer_offsets)$"])
        wait_for(
            lambda: assigned() == {"kip848-int-a", "__consumer_offsets"},
            30,
            "kip848-int-a and __consumer_offsets assigned",
        )
        offsets = admin.list_topics(timeout=10).topics["__consumer_offsets"]
        members = admin.describe_consumer_groups(["kip848-internal"])["kip848-internal"]
        (member,) = members.result(10).members
        internal = {
            tp.partition
            for tp in member.assignment.topic_partitions
            if tp.topic == "__consumer_offsets"
        }
        assert internal == set(offsets.partitions)
    finally:
        consumer.close()
