"""The soak's mixed load (bench/soak.py): producers, a consuming group, group churn and
topic churn, each in its own thread, every error counted rather than raised, so one
failing kind of traffic shows in the totals instead of ending the soak."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPICS = ("soak-a", "soak-b", "soak-c")
PARTITIONS = 4
VALUE = b"v" * 512
TOPIC_CONFIG = {
    # Bounded disk: segments roll every 1 MiB and the oldest go past 8 MiB a partition.
    "segment.bytes": str(1 << 20),
    "retention.bytes": str(8 << 20),
}


class Load:
    def __init__(self, bootstrap: str, rate: int = 2000) -> None:
        self.bootstrap = bootstrap
        self.rate = rate
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lat: list[float] = []
        self._lat_lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    def take_latencies(self) -> list[float]:
        with self._lat_lock:
            out, self._lat = self._lat, []
        return out

    def totals(self) -> dict[str, object]:
        return {**dict(self.counts), "errors": dict(self.errors)}

    def start(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = [NewTopic(t, PARTITIONS, 1, config=TOPIC_CONFIG) for t in TOPICS]
        for f in admin.create_topics(new).values():
            f.result(30)
        for fn in (self._produce, self._consume, self._group_churn, self._topic_churn):
            t = threading.Thread(target=self._guard(fn), daemon=True, name=fn.__name__)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(120)

    def _guard(self, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            while not self._stop.is_set():
                try:
                    fn()
                except Exception as e:
                    self.errors[f"{fn.__name__}: {type(e).__name__}: {str(e)[:80]}"] += 1
                    self._stop.wait(1)

        return run

    def _produce(self) -> None:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )

        def report(sent_at: float) -> Callable[[object, object], None]:
            def on_delivery(err: object, _msg: object) -> None:
                if err is None:
                    with self._lat_lock:
                        self._lat.append(time.monotonic() - sent_at)
                    self.counts["produced"] += 1
                else:
                    self.errors[f"produce: {err}"] += 1

            return on_delivery

        interval = 1.0 / self.rate
        next_at = time.monotonic()
        i = 0
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                p.produce(TOPICS[i % len(TOPICS)], VALUE, on_delivery=report(now))
            except BufferError:
                p.poll(0.05)
                continue
            i += 1
            p.poll(0)
            next_at += interval
            if next_at > now:
                time.sleep(next_at - now)
            elif now - next_at > 1.0:
                next_at = now  # behind by a second: do not burst to catch up
        p.flush(30)

    def _consume(self) -> None:
        members = [
            Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": "soak-readers",
                    "auto.offset.reset": "earliest",
                    "auto.commit.interval.ms": 1000,
                }
            )
            for _ in range(2)
        ]
        try:
            for c in members:
                c.subscribe(list(TOPICS))
            while not self._stop.is_set():
                for c in members:
                    for m in c.consume(500, timeout=0.1):
                        if m.error() is None:
                            self.counts["consumed"] += 1
        finally:
            for c in members:
                c.close()

    def _group_churn(self) -> None:
        n = self.counts["groups"]
        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"churn-{n}",
                "auto.offset.reset": "latest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
            }
        )
        try:
            c.subscribe([TOPICS[n % len(TOPICS)]])
            deadline = time.monotonic() + 15
            while not c.assignment() and time.monotonic() < deadline:
                c.poll(0.1)
            if c.assignment():
                # Nothing consumed yet, so nothing stored to commit: commit each
                # partition's end explicitly.
                ends = [
                    TopicPartition(tp.topic, tp.partition, c.get_watermark_offsets(tp, 5)[1])
                    for tp in c.assignment()
                ]
                c.commit(offsets=ends, asynchronous=False)
                self.counts["groups"] += 1
            else:
                self.errors["group churn: no assignment in 15 s"] += 1
                self.counts["groups"] += 1  # a new group name next time
        except KafkaException as e:
            self.errors[f"group churn: {e.args[0]}"] += 1
            self.counts["groups"] += 1  # a new group name next time
        finally:
            c.close()
        self._stop.wait(2)

    def _topic_churn(self) -> None:
        name = f"churn-topic-{self.counts['topics']}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all"})
        for _ in range(20):
            p.produce(name, VALUE)
        left = p.flush(30)
        if left:
            self.errors["topic churn: records not delivered"] += left
        admin.delete_topics([name])[name].result(30)
        self.counts["topics"] += 1
        self._stop.wait(3)
