"""Consumer-group members in separate processes (see worker.py), watched from the test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

WORKER = Path(__file__).with_name("worker.py")
JAVA_WORKER = Path(__file__).with_name("ConsumerProtocolWorker.java")
PARTITIONS = 6


class Member:
    """One worker process and everything it has printed so far."""

    def __init__(self, bootstrap: str, topic: str, group: str, client: str, **opts: Any) -> None:
        cmd = [
            sys.executable,
            str(WORKER),
            "--client",
            client,
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
        ]
        for key, value in opts.items():
            if value is not None:
                cmd += [f"--{key.replace('_', '-')}", str(value)]
        if client == "java":
            # Kafka's own Java consumer (group.protocol=consumer, or classic), from Kafka's
            # jars.
            from kafkalite.bench import kafka_ref

            libs = kafka_ref.classpath(kafka_ref.ensure_jars())
            protocol = opts.get("protocol") or "consumer"
            cmd = ["java", "-Xmx256m", "-cp", libs, str(JAVA_WORKER), bootstrap, topic, group]
            cmd.append(protocol)
        self.client = client
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["ev"] == kind]

    @property
    def assignment(self) -> set[int]:
        assigned = self.of("assigned")
        return set(assigned[-1]["partitions"]) if assigned else set()

    @property
    def ever_assigned(self) -> set[int]:
        """Every partition this member has owned at some point."""
        return set().union(*(e["partitions"] for e in self.of("assigned")))

    @property
    def records(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in self.of("msg")]

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM: the worker closes its consumer cleanly (LeaveGroup)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.wait(timeout)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def wait(self, timeout: float = 30) -> None:
        self.proc.wait(timeout)
        self._reader.join(5)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def split_evenly(members: Iterable[Member]) -> bool:
    """Every member owns partitions, and together they own each partition exactly once."""
    owned = [m.assignment for m in members]
    return (
        all(owned)
        and sum(len(o) for o in owned) == PARTITIONS
        and set().union(*owned) == set(range(PARTITIONS))
    )


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def produce(
    bootstrap: str, topic: str, count: int, start: int = 0, partitions: int = PARTITIONS
) -> set[str]:
    """`count` records spread round-robin over the partitions; returns their values."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = set()
    for i in range(start, start + count):
        value = f"v{i}"
        p.produce(topic, value.encode(), partition=i % partitions)
        values.add(value)
    assert p.flush(15) == 0
    return values


class SteadyProducer:
    """Writes `v0`, `v1`, ... round-robin over the partitions until stopped; `sent` holds
    the values the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
        self.sent: set[str] = set()
        self._partitions = partitions
        self._stop = threading.Event()
        # Idempotent: a write acknowledged as the broker stops is retried after its restart,
        # and only idempotence keeps that retry from being a second copy the consumers
        # would count as read twice (a CI run saw one).
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
        )
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err: object, msg: object) -> None:
        if err is None:
            self.sent.add(msg.value().decode())  # type: ignore[attr-defined]

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            for _ in range(self._partitions):
                self._producer.produce(
                    self._topic,
                    f"v{i}".encode(),
                    partition=i % self._partitions,
                    on_delivery=self._delivered,
                )
                i += 1
            self._producer.poll(0)
            self._stop.wait(0.05)

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(15) == 0
        return self.sent


def values_of(members: Iterable[Member]) -> list[str]:
    return [e["v"] for m in members for e in m.of("msg")]
