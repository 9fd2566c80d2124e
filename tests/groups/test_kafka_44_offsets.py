"""Kafka 4.4.0's own Java tools commit and read a group's offsets on kafkalite: its console
consumer in the consumer protocol (KIP-848) commits what it read, and its
`kafka-consumer-groups --describe` shows the offsets at the log end. Kafka 4.4's clients
pick the newest version both sides speak, so they meet the OffsetCommit and OffsetFetch
ranges kafkalite now advertises (up to v10, topics by id) end to end."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import Broker
from kafkalite.bench import kafka_ref

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")

RECORDS = 7


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data") as b:
        yield b


def tool(main: str, args: list[str]) -> str:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(kafka_ref.KAFKA_VERSION), main, args)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_kafka_44_consumer_commits_and_kafka_consumer_groups_reads_back(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    producer = Producer({"bootstrap.servers": bs})
    for i in range(RECORDS):
        producer.produce("k44-offsets", f"v{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    consumed = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        [
            "--bootstrap-server", bs, "--topic", "k44-offsets", "--group", "k44-group",
            "--from-beginning", "--max-messages", str(RECORDS),
            "--consumer-property", "group.protocol=consumer",
        ],
    )  # fmt: skip
    # (It prints a notice about a deprecated option before the records.)
    values = [line for line in consumed.splitlines() if re.fullmatch(r"v\d+", line)]
    assert values == [f"v{i}" for i in range(RECORDS)]
    described = tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        ["--bootstrap-server", bs, "--describe", "--group", "k44-group"],
    )
    rows = [line.split() for line in described.splitlines() if re.match(r"k44-group\s", line)]
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    assert [row[1:6] for row in rows] == [["k44-offsets", "0", str(RECORDS), str(RECORDS), "0"]]
    # The same commit as another client reads it (OffsetFetch by name).
    other = Consumer({"bootstrap.servers": bs, "group.id": "k44-group"})
    try:
        (committed,) = other.committed([TopicPartition("k44-offsets", 0)], timeout=10)
    finally:
        other.close()
    assert committed.offset == RECORDS
