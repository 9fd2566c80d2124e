from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kafkalite import _core

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def partitions(bootstrap: str, topic: str) -> dict[int, _core.PartitionMetadata]:
    """Partition -> metadata as the broker(s) at ``bootstrap`` answer Metadata."""
    with _core.KafkaClient(bootstrap, request_timeout_ms=5000) as client:
        t = client.metadata([topic]).topics.get(topic)
        if t is None or t.error_code != 0:
            return {}
        return {p.partition: p for p in t.partitions}


def settled(
    bootstraps: list[str], topic: str, count: int, timeout: float = 20.0
) -> dict[int, _core.PartitionMetadata]:
    """Wait until every broker's Metadata shows ``count`` partitions of ``topic`` with
    leaders (brokers learn a new topic from ZooKeeper, each in its own time); the view of
    the first."""

    def everywhere() -> dict[int, _core.PartitionMetadata] | None:
        views = [partitions(b, topic) for b in bootstraps]
        full = all(len(v) == count and all(p.leader >= 0 for p in v.values()) for v in views)
        return views[0] if full else None

    return wait_for(everywhere, timeout)
