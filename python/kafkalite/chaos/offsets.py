"""The checker for a consumer group's committed offsets: no committed offset ever moves
backwards, and no acknowledged commit is lost.

A member of the group reads the topic and commits synchronously as it goes (each
successful commit is an acknowledged one); a watcher asks the coordinator for the group's
committed offsets (OffsetFetch) every ``interval`` seconds through the whole run, faults
included. Counted:

- backwards: an OffsetFetch answer lower than one seen before for the same partition;
- commit_lost: at the end, a committed offset lower than the highest acknowledged commit.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

GROUP_CONFIG = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
}


@dataclass
class OffsetsResult:
    commits_acked: int = 0
    samples: int = 0
    backwards: int = 0
    commit_lost: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.backwards == 0 and self.commit_lost == 0

    def as_dict(self) -> dict[str, Any]:
        keys = ("commits_acked", "samples", "backwards", "commit_lost")
        return {k: getattr(self, k) for k in keys}


class GroupOffsets:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group: str = "checked-group",
        interval: float = 0.1,
        member: bool = True,
    ) -> None:
        """``member=False``: watch only (the group's commits come from elsewhere)."""
        self.bootstrap, self.topic, self.group, self.interval = bootstrap, topic, group, interval
        self.result = OffsetsResult()
        self.acked: dict[int, int] = {}
        self.seen: dict[int, int] = {}
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        # Same group id, never subscribes: OffsetFetch without joining the group.
        self._watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        self._threads = [threading.Thread(target=self._watch, daemon=True)]
        if member:
            self._threads.append(threading.Thread(target=self._member, daemon=True))

    def start(self) -> GroupOffsets:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> OffsetsResult:
        self._stop.set()
        for t in self._threads:
            t.join(60)
        final = self._fetch(timeout=30)
        for p, acked in self.acked.items():
            got = final.get(p, -1) if final is not None else -1
            if got < acked:
                self.result.commit_lost += 1
                self.result.examples.append(f"partition {p}: committed {got} < acked {acked}")
        self._watcher.close()
        return self.result

    def _member(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, **GROUP_CONFIG})
        c.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                msgs = c.consume(200, timeout=0.2)
                if not any(m.error() is None for m in msgs):
                    continue
                try:
                    done = c.commit(asynchronous=False)
                except KafkaException as e:
                    self.errors[e.args[0].name()] += 1  # not acknowledged: not counted
                    continue
                for tp in done or []:
                    if tp.error is None and tp.offset >= 0:
                        self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), tp.offset)
                        self.result.commits_acked += 1
        finally:
            c.close()

    def _fetch(self, timeout: float = 2.0) -> dict[int, int] | None:
        c = self._watcher
        try:
            md = c.list_topics(self.topic, timeout=timeout).topics[self.topic]
            parts = [TopicPartition(self.topic, p) for p in md.partitions]
            return {tp.partition: tp.offset for tp in c.committed(parts, timeout=timeout)}
        except KafkaException as e:
            self.errors[f"OffsetFetch: {e.args[0].name()}"] += 1
            return None

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            got = self._fetch()
            if got is None:
                continue
            self.result.samples += 1
            for p, off in got.items():
                if off < 0:
                    continue  # nothing committed yet (or an error answer)
                before = self.seen.get(p, -1)
                if off < before:
                    self.result.backwards += 1
                    if len(self.result.examples) < 5:
                        self.result.examples.append(f"partition {p}: {before} -> {off}")
                self.seen[p] = max(before, off)
