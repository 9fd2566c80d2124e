"""Offsets committed by group members: a restarted consumer resumes exactly where the group
committed, also after the broker itself restarts (offsets replayed from
`__consumer_offsets`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkalite import Broker
from tests.groups.conftest import GROUP_CONFIG
from tests.groups.members import PARTITIONS, Member, create_topic, produce, values_of, wait_for


def consume_some(bs: str, client: str, group: str, n: int) -> Member:
    m = Member(bs, "ledger", group, client, max=n)
    m.wait(60)
    assert m.of("closed"), "the worker commits and closes after --max records"
    return m


def committed(bs: str, group: str) -> dict[int, tuple[int, str]]:
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        tps = c.committed([TopicPartition("ledger", p) for p in range(PARTITIONS)], timeout=10)
        return {tp.partition: (tp.offset, tp.metadata or "") for tp in tps if tp.offset >= 0}
    finally:
        c.close()


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_commit_restart_and_resume_at_the_committed_offsets(broker: Broker, client: str) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "ledger")
    sent = produce(bs, "ledger", 120)
    first = consume_some(bs, client, "resume", 50)
    # The group's commits are exactly what the first consumer had consumed (kafka-python
    # also commits position 0 of partitions it had not read from yet).
    expected = {p: 0 for p in range(PARTITIONS)}
    for p, o in first.records:
        expected[p] = max(expected[p], o + 1)
    stored = {p: off for p, (off, _) in committed(bs, "resume").items()}
    assert stored == {p: off for p, off in expected.items() if off > 0 or p in stored}
    second = Member(bs, "ledger", "resume", client)
    try:
        wait_for(lambda: len(values_of([first, second])) >= 120, 30, "the rest")
        got = Counter(values_of([first, second]))
        assert set(got) == sent and max(got.values()) == 1, "resumed exactly where committed"
    finally:
        second.stop()


def test_committed_offsets_and_metadata_survive_a_broker_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data, config=GROUP_CONFIG) as b:
        bs = b.bootstrap_servers
        create_topic(bs, "ledger")
        sent = produce(bs, "ledger", 90)
        first = consume_some(bs, "confluent", "durable", 40)
        # An assign()-mode consumer's commit with metadata, to another group.
        c = Consumer({"bootstrap.servers": bs, "group.id": "tools", "enable.auto.commit": False})
        c.commit(
            offsets=[TopicPartition("ledger", 2, 7, metadata="checkpoint")], asynchronous=False
        )
        c.close()
        before = committed(bs, "durable")
        assert sum(off for off, _ in before.values()) == 40
    with Broker(log_dirs=data, config=GROUP_CONFIG) as b:
        bs = b.bootstrap_servers
        assert committed(bs, "durable") == before
        assert committed(bs, "tools") == {2: (7, "checkpoint")}
        second = Member(bs, "ledger", "durable", "confluent")
        try:
            wait_for(lambda: len(values_of([first, second])) >= 90, 30, "the rest after restart")
            got = Counter(values_of([first, second]))
            assert set(got) == sent and max(got.values()) == 1
        finally:
            second.stop()
