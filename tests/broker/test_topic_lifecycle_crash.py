"""Topic deletion and creation survive SIGKILL: a broker process killed right after
DeleteTopics or CreateTopics restarts with no orphan partition dirs, and a topic recreated
under the same name never serves the old topic's records."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.test_cli_and_daemon import KAFKALITE, free_port, wait_for_port

PARTITIONS = 3
# Small segments so a partition has many files and deleting it takes a while.
TOPIC_CONFIG = {"segment.bytes": "1024"}


def start_daemon(port: int, data: Path) -> subprocess.Popen:  # type: ignore[type-arg]
    """A broker process; what it logs at start (deletions it finishes) is passed over."""
    proc = subprocess.Popen(
        [
            *KAFKALITE,
            "broker",
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{port}",
            "--log-dirs",
            str(data),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, proc)
    assert proc.stderr is not None
    while not proc.stderr.readline().startswith("kafkalite broker started"):
        assert proc.poll() is None
    return proc


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(n):
        p.produce(
            topic, key=b"k%d" % i, value=b"old-%d-" % i + b"x" * 200, partition=i % PARTITIONS
        )
    assert p.flush(15) == 0


def consume_all(bootstrap: str, topic: str) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list[bytes] = []
    idle = 0
    while idle < 3:
        msgs = c.consume(1000, timeout=0.3)
        idle = 0 if msgs else idle + 1
        out.extend(m.value() for m in msgs if m.error() is None)
    c.close()
    return out


def partition_dirs(data: Path) -> list[str]:
    """Every dir in the log dir but the broker's own metadata dir."""
    return sorted(p.name for p in data.iterdir() if p.is_dir() and p.name != ".kafkalite")


def expected_dirs(bootstrap: str) -> list[str]:
    """The partition dirs of every topic the restarted broker knows."""
    topics = admin(bootstrap).list_topics(timeout=10).topics
    return sorted(f"{t}-{p}" for t, md in topics.items() for p in md.partitions)


def kill_soon(proc: subprocess.Popen, rng: random.Random, round_: int, watched: Path) -> None:  # type: ignore[type-arg]
    """SIGKILL the broker in the middle of the change: in even rounds the moment `watched`
    (a partition dir) appears or disappears on disk, in odd rounds 0-50 ms from now, as
    the crashes that left dirs behind did."""
    if round_ % 2 == 0:
        existed = watched.exists()
        deadline = time.monotonic() + 10
        while watched.exists() == existed and time.monotonic() < deadline:
            pass
    else:
        time.sleep(rng.uniform(0, 0.05))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)


def test_sigkill_after_delete_topics_never_brings_data_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(17)
    for round_ in range(4):
        port = free_port()
        proc = start_daemon(port, data)
        bootstrap = f"127.0.0.1:{port}"
        try:
            a = admin(bootstrap)
            a.create_topics([NewTopic("doomed", PARTITIONS, 1, config=TOPIC_CONFIG)])[
                "doomed"
            ].result(10)
            produce(bootstrap, "doomed", 1500)
            a.delete_topics(["doomed"])
            kill_soon(proc, rng, round_, data / "doomed-0")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        port = free_port()
        proc = start_daemon(port, data)
        bootstrap = f"127.0.0.1:{port}"
        try:
            a = admin(bootstrap)
            topics = a.list_topics(timeout=10).topics
            # Killed before the deletion was committed, the topic is whole; after, it is
            # gone with every dir of it.
            assert partition_dirs(data) == expected_dirs(bootstrap), round_
            if "doomed" in topics:
                a.delete_topics(["doomed"])["doomed"].result(10)
            a.create_topics([NewTopic("doomed", PARTITIONS, 1)])["doomed"].result(10)
            assert consume_all(bootstrap, "doomed") == [], round_
            a.delete_topics(["doomed"])["doomed"].result(10)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)


def test_sigkill_after_create_topics_leaves_no_orphans(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(18)
    for round_ in range(4):
        name = f"fresh{round_}"
        port = free_port()
        proc = start_daemon(port, data)
        try:
            a = admin(f"127.0.0.1:{port}")
            a.create_topics([NewTopic(name, PARTITIONS, 1)])
            kill_soon(proc, rng, round_, data / f"{name}-0")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        port = free_port()
        proc = start_daemon(port, data)
        bootstrap = f"127.0.0.1:{port}"
        try:
            a = admin(bootstrap)
            topics = a.list_topics(timeout=10).topics
            assert partition_dirs(data) == expected_dirs(bootstrap), round_
            # Whatever survived, the name works and holds nothing old.
            if name in topics:
                a.delete_topics([name])[name].result(10)
            a.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(10)
            produce(bootstrap, name, 3)
            assert len(consume_all(bootstrap, name)) == 3
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
