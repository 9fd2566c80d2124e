"""KIP-848 mixed groups with Kafka's Java consumers, as Kafka 4.1 runs them: a group of
classic members (group.protocol=classic) is upgraded online when a consumer-protocol member
joins and keeps its classic members; it becomes classic again when that member leaves, is
upgraded again by another one, and stays a consumer group when the classic members leave.
A producer writes throughout; every record is consumed exactly once across the changes,
and the group's committed offsets end at the log end.

The same sequence run against Kafka 4.1.1 (`run_sequence` with Kafka's bootstrap address)
goes through the same group types and states."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite import Broker
from tests.groups.members import Member, SteadyProducer, create_topic, values_of, wait_for
from tests.groups.test_consumer_protocol import CONSUMER_CONFIG

PARTITIONS = 12

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=CONSUMER_CONFIG) as b:
        yield b


def _covers_all(members: list[Member]) -> bool:
    owned = [m.assignment for m in members]
    return all(owned) and sorted(p for o in owned for p in o) == list(range(PARTITIONS))


def _group(admin: AdminClient, group: str) -> tuple[str, str]:
    """The group's type and state as ListGroups shows them."""
    listed = admin.list_consumer_groups().result(10)
    mine = [g for g in listed.valid if g.group_id == group]
    return (mine[0].type.name, mine[0].state.name) if mine else ("", "")


def _members_shown_by_kafka_tool(bs: str, group: str) -> list[str]:
    """The member rows Kafka's kafka-consumer-groups --describe --members prints."""
    from kafkalite.bench import kafka_ref

    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        ["--bootstrap-server", bs, "--describe", "--group", group, "--members", "--verbose"],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if re.match(rf"{re.escape(group)}\s", line)]


def _committed(bs: str, group: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in c.committed(parts, timeout=10)}
    finally:
        c.close()


def _log_ends(bs: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "log-ends"})
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        c.close()


def run_sequence(bs: str, topic: str, group: str) -> list[tuple[str, str, int]]:
    """Classic members, an upgrade, a downgrade, another upgrade, the classic members
    leaving; a producer writing throughout. Returns (type, state, members) after each step
    and checks every record was consumed exactly once."""
    create_topic(bs, topic, PARTITIONS)
    admin = AdminClient({"bootstrap.servers": bs})
    producer = SteadyProducer(bs, topic, PARTITIONS)
    seen_types: list[tuple[str, str, int]] = []
    everyone: list[Member] = []

    def java(protocol: str) -> Member:
        m = Member(bs, topic, group, "java", protocol=protocol)
        everyone.append(m)
        return m

    def settled(members: list[Member], group_type: str, what: str) -> None:
        wait_for(lambda: _covers_all(members), 60, what)
        wait_for(lambda: _group(admin, group) == (group_type, "STABLE"), 30, f"{what}: stable")
        seen_types.append((*_group(admin, group), len(members)))

    try:
        a, b = java("classic"), java("classic")
        settled([a, b], "CLASSIC", "two classic members splitting 12 partitions")

        # A consumer-protocol member joins: the classic group is upgraded online.
        c = java("consumer")
        settled([a, b, c], "CONSUMER", "the upgraded group's three members")
        rows = _members_shown_by_kafka_tool(bs, group)
        assert len(rows) == 3, rows

        # It leaves: only classic members remain, and the group is classic again.
        c.stop()
        assert c.of("closed"), "the consumer-protocol member closed cleanly"
        settled([a, b], "CLASSIC", "the downgraded group's two classic members")

        # Another one upgrades it again; then the classic members leave.
        d = java("consumer")
        settled([a, b, d], "CONSUMER", "the group upgraded again")
        for m in (a, b):
            m.stop()
            assert m.of("closed"), "a classic member closed cleanly"
        settled([d], "CONSUMER", "the consumer-protocol member alone")

        sent = producer.stop()
        wait_for(lambda: set(values_of(everyone)) >= sent, 60, "every record consumed")
        d.stop()
        seen = Counter(values_of(everyone))
        duplicates = {v: n for v, n in seen.items() if n > 1}
        assert not duplicates, f"{len(duplicates)} records consumed twice: {list(duplicates)[:5]}"
        assert set(seen) == sent
        assert _committed(bs, group, topic) == _log_ends(bs, topic)
        errors = [e for m in everyone for e in m.of("error")]
        assert not errors, errors
        return seen_types
    finally:
        producer.stop()
        for m in everyone:
            if m.proc.poll() is None:
                m.kill()


def test_a_classic_group_upgrades_and_downgrades_online_consuming_every_record_once(
    broker: Broker,
) -> None:
    steps = run_sequence(broker.bootstrap_servers, "mixed", "mixed-group")
    assert steps == [
        ("CLASSIC", "STABLE", 2),
        ("CONSUMER", "STABLE", 3),
        ("CLASSIC", "STABLE", 2),
        ("CONSUMER", "STABLE", 3),
        ("CONSUMER", "STABLE", 1),
    ]
