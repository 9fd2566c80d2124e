"""Small helpers shared by the transaction tests: topic creation and draining a topic
with a given isolation level."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

# How long every partition has to reach its end before `drain` gives up.
REACH_END_S = 60.0


def create(bootstrap: str, name: str, partitions: int, replicas: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, replicas)])[name].result(timeout=30)


def drain(
    bootstrap: str, topic: str, partitions: int, isolation: str, settle_s: float = 2.0
) -> list:
    """Every message of the topic from the start: read until every partition has reached
    its end (the last stable offset under read_committed) at least once, then until
    `settle_s` passes without a message. A quiet spell alone is not the end: on a loaded
    machine the first fetch can take longer than `settle_s`."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"drain-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    at_end: set[int] = set()
    give_up = time.monotonic() + REACH_END_S
    quiet_until = time.monotonic() + settle_s
    while time.monotonic() < give_up and (
        len(at_end) < partitions or time.monotonic() < quiet_until
    ):
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
            continue
        got.append(m)
        quiet_until = time.monotonic() + settle_s
    c.close()
    assert len(at_end) == partitions, (
        f"{topic}: partitions {sorted(set(range(partitions)) - at_end)} never reached their"
        f" end in {REACH_END_S} s"
    )
    return got
