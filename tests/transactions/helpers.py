"""Small helpers shared by the transaction tests: topic creation and draining a topic
with a given isolation level."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(bootstrap: str, name: str, partitions: int, replicas: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, replicas)])[name].result(timeout=30)


def drain(
    bootstrap: str, topic: str, partitions: int, isolation: str, settle_s: float = 2.0
) -> list:
    """Every message of the topic from the start, until `settle_s` passes without one."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"drain-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    quiet_until = time.monotonic() + settle_s
    while time.monotonic() < quiet_until:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got.append(m)
        quiet_until = time.monotonic() + settle_s
    c.close()
    return got
