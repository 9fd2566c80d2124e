"""A KIP-848 consumer group survives a broker restart as it survives one in Kafka 4.1: its
records in __consumer_offsets bring back every member with its id, epoch and partitions,
so Kafka's Java consumers (group.protocol=consumer) carry on heartbeating at their epochs
(no FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, no rebalance) and consume every record
exactly once while a producer writes through the restart."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.bench.systems import free_port
from tests.groups.members import Member, SteadyProducer, create_topic, values_of, wait_for
from tests.groups.test_consumer_protocol import CONSUMER_CONFIG

PARTITIONS = 12
GROUP = "restart-group"
TOPIC = "restart"

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")


def _consumer_groups(bs: str, *args: str) -> list[list[str]]:
    """The rows of the group Kafka's kafka-consumer-groups --describe prints."""
    from kafkalite.bench import kafka_ref

    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        ["--bootstrap-server", bs, "--describe", "--group", GROUP, "--verbose", *args],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line.split() for line in done.stdout.splitlines() if re.match(rf"{GROUP}\s", line)]


def _epochs(bs: str) -> tuple[int, dict[str, int]]:
    """The group epoch, and each member's epoch by member id."""
    (state,) = _consumer_groups(bs, "--state")
    # GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-EPOCH #MEMBERS
    group_epoch = int(state[-3])
    # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH ...
    members = {row[1]: int(row[5]) for row in _consumer_groups(bs, "--members")}
    return group_epoch, members


def _covers_all(members: list[Member]) -> bool:
    owned = [m.assignment for m in members]
    return all(owned) and sorted(p for o in owned for p in o) == list(range(PARTITIONS))


def test_members_keep_their_ids_epochs_and_partitions_through_a_broker_restart(
    tmp_path: Path,
) -> None:
    data, port = tmp_path / "data", free_port()
    broker = Broker(log_dirs=data, config=CONSUMER_CONFIG, port=port).start()
    members: list[Member] = []
    producer: SteadyProducer | None = None
    try:
        bs = broker.bootstrap_servers
        create_topic(bs, TOPIC, PARTITIONS)
        producer = SteadyProducer(bs, TOPIC, PARTITIONS)
        members = [Member(bs, TOPIC, GROUP, "java") for _ in range(3)]
        wait_for(lambda: _covers_all(members), 60, "three members splitting 12 partitions")
        wait_for(lambda: all(len(m.of("msg")) > 20 for m in members), 30, "consuming")
        before = _epochs(bs)
        assert len(before[1]) == 3, before
        assignments = [m.assignment for m in members]
        changes = [len(m.of("assigned")) for m in members]

        broker.stop()
        broker = Broker(log_dirs=data, config=CONSUMER_CONFIG, port=port).start()

        # Everyone consumes what was written after the restart, at the same epochs.
        consumed = [len(m.of("msg")) for m in members]
        wait_for(
            lambda: all(len(m.of("msg")) > n + 20 for m, n in zip(members, consumed, strict=True)),
            60,
            "every member consuming after the restart",
        )
        assert _epochs(bs) == before
        assert [m.assignment for m in members] == assignments
        assert [len(m.of("assigned")) for m in members] == changes, "no member rebalanced"

        sent = producer.stop()
        wait_for(lambda: set(values_of(members)) >= sent, 60, "every record consumed")
        for m in members:
            m.stop()
        seen = Counter(values_of(members))
        duplicates = {v: n for v, n in seen.items() if n > 1}
        assert not duplicates, f"{len(duplicates)} records consumed twice: {list(duplicates)[:5]}"
        assert set(seen) == sent
    finally:
        if producer is not None:
            producer.stop()
        for m in members:
            if m.proc.poll() is None:
                m.kill()
        broker.stop()
