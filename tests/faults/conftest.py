from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data") as b:
        yield b


def create_topic(bootstrap: str, name: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config or {})])[name].result(10)


def log_end(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        c.close()


def consume_values(bootstrap: str, topic: str, want: int) -> list[tuple[int, bytes]]:
    """(offset, value) of the first `want` records from offset 0, with librdkafka."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes]] = []
    try:
        for _ in range(100):
            if len(out) >= want:
                break
            for m in c.consume(want, timeout=0.2):
                assert m.error() is None, m.error()
                out.append((m.offset(), m.value()))
    finally:
        c.close()
    return out
