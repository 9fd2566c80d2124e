"""Share groups (KIP-932) on one broker with Kafka 4.4's own KafkaShareConsumer: several
consumers on one partition accept every record exactly once between them; a rejected record
is never redelivered, a released one is until `share.delivery.count.limit`, then archived;
records a SIGKILLed consumer held come to another after the acquisition lock; a broker
restart keeps what was acknowledged (the state in `__share_group_state`, which Kafka's
kafka-dump-log decodes); Kafka's kafka-share-groups lists and describes the group (members,
start offset and lag), resets its offsets and deletes it once empty."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.broker import rawproto

WORKER = Path(__file__).with_name("ShareConsumerWorker.java")
KAFKA = "4.4.0"
# A lock short enough to wait out in a test: Kafka's floor for the group value is this
# broker key (default 15 s).
BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": 1000,
    # Members hear of each other within a second (Kafka's floor is 5 s).
    "group.share.min.heartbeat.interval.ms": 500,
    "group.share.heartbeat.interval.ms": 1000,
}
EARLIEST = "share.auto.offset.reset=earliest"


@pytest.fixture(scope="module")
def libs() -> str:
    return kafka_ref.classpath(kafka_ref.ensure_jars(KAFKA))


@pytest.fixture(scope="module")
def worker_cp(libs: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The worker compiled once (a source-file launch compiles it at every start)."""
    out = tmp_path_factory.mktemp("share-worker")
    subprocess.run(["javac", "-cp", libs, "-d", str(out), str(WORKER)], check=True, timeout=120)
    return f"{out}:{libs}"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=BROKER_CONFIG) as b:
        yield b


# Every worker started, so a failing test leaves none running.
_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_worker_left() -> Iterator[None]:
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


class Worker:
    """One ShareConsumerWorker process and what it printed."""

    def __init__(self, cp: str, bootstrap: str, topic: str, group: str, mode: str, *configs: str):
        cmd = ["java", "-Xmx256m", "-cp", cp, WORKER.stem, bootstrap, topic, group, mode]
        self.proc = subprocess.Popen([*cmd, *configs], stdout=subprocess.PIPE, text=True)
        _STARTED.append(self.proc)
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
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

    def msgs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["ev"] == "msg"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["ev"] == kind]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self._reader.join(5)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)


def produce(bootstrap: str, topic: str, values: list[str], per_batch: int = 5) -> None:
    """Small batches, so several consumers get some (a share fetch acquires whole batches)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, v in enumerate(values):
        p.produce(topic, v.encode())
        if i % per_batch == per_batch - 1:
            assert p.flush(10) == 0
    assert p.flush(10) == 0


def _uvarint(buf: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _compact_string(buf: bytes, at: int) -> tuple[str | None, int]:
    n, at = _uvarint(buf, at)
    if n == 0:
        return None, at
    return buf[at : at + n - 1].decode(), at + n - 1


def share_group_members(bootstrap: str, group: str) -> tuple[str, int]:
    """(state, member count) of a share group from a ShareGroupDescribe v1 of our own."""
    gid = group.encode()
    body = rawproto.uvarint(2) + rawproto.uvarint(len(gid) + 1) + gid + b"\x00" + b"\x00"
    sock = rawproto.connect(bootstrap)
    try:
        sock.sendall(rawproto.frame(rawproto.header_v2(77, 1, 7) + body))
        buf = rawproto.read_frame(sock)
    finally:
        sock.close()
    at = 4 + 1 + 4  # correlation id, header tags, throttle
    _, at = _uvarint(buf, at)  # one group
    error = int.from_bytes(buf[at : at + 2], "big", signed=True)
    _, at = _compact_string(buf, at + 2)  # error message
    _, at = _compact_string(buf, at)  # group id
    state, at = _compact_string(buf, at)
    _, at = _compact_string(buf, at + 8)  # epochs, assignor
    members, _ = _uvarint(buf, at)
    return ("Dead" if error else state or ""), max(members - 1, 0)


def deliveries(workers: list[Worker]) -> list[dict[str, Any]]:
    return [e for w in workers for e in w.msgs()]


def tool(libs: str, main: str, *args: str) -> str:
    cmd = ["java", "-Xmx256m", "-cp", libs, main, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_consumers_share_a_partition_accept_once_reject_release_and_archive(
    broker: Broker, libs: str, worker_cp: str
) -> None:
    bs, topic, group = broker.bootstrap_servers, "queue", "workers"
    create_topic(bs, topic)
    plain = [f"v-{i}" for i in range(150)]
    rejected = [f"reject-{i}" for i in range(5)]
    released = [f"release-{i}" for i in range(5)]
    # Spread the special records over the log.
    values = plain[:50] + rejected + plain[50:100] + released + plain[100:]
    configs = (EARLIEST, "share.delivery.count.limit=3")
    # The first worker sets the group's configs; the records come once all three joined.
    workers = [Worker(worker_cp, bs, topic, group, "ack", *configs)]
    wait_for(lambda: share_group_members(bs, group)[1] == 1, 60, "the first member")
    workers += [Worker(worker_cp, bs, topic, group, "ack") for _ in range(2)]
    wait_for(lambda: share_group_members(bs, group)[1] == 3, 60, "three members")
    produce(bs, topic, values)

    def accepted() -> Counter[str]:
        return Counter(e["v"] for e in deliveries(workers) if e["ack"] == "ACCEPT")

    def settled() -> bool:
        counts = Counter(e["v"] for e in deliveries(workers))
        return set(accepted()) >= set(plain) and all(counts[v] >= 3 for v in released)

    wait_for(settled, 90, "every record accepted and the released ones delivered 3 times")
    time.sleep(1.5)  # anything delivered again would show now
    counts = Counter(e["v"] for e in deliveries(workers))
    assert accepted() == Counter(plain), "every record accepted exactly once overall"
    assert all(counts[v] == 1 for v in plain)
    receiving = [w for w in workers if w.msgs()]
    assert len(receiving) >= 2, [len(w.msgs()) for w in workers]
    for v in rejected:
        assert counts[v] == 1, f"rejected {v} was redelivered"
    for v in released:
        # Released each time; the third delivery reached share.delivery.count.limit.
        dcs = sorted(e["dc"] for e in deliveries(workers) if e["v"] == v)
        assert dcs == [1, 2, 3], (v, dcs)
    assert not any(w.of("commit_failed") for w in workers)

    # Kafka's own kafka-share-groups sees the group, its members and where it stands.
    main = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
    listed = tool(libs, main, "--bootstrap-server", bs, "--list")
    assert group in listed.split()
    members = tool(
        libs, main, "--bootstrap-server", bs, "--describe", "--members", "--group", group
    )
    assert len([ln for ln in members.splitlines() if ln.startswith(group)]) == 3, members
    offsets = tool(libs, main, "--bootstrap-server", bs, "--describe", "--group", group)
    row = next(ln.split() for ln in offsets.splitlines() if ln.startswith(group))
    # GROUP TOPIC PARTITION START-OFFSET LAG: everything is done with.
    assert row[1:5] == [topic, "0", str(len(values)), "0"], offsets
    for w in workers:
        w.stop()
    # Once empty, the group's offsets can be reset and the group deleted.
    wait_for(lambda: share_group_members(bs, group)[1] == 0, 30, "the members to leave")
    reset = tool(
        libs, main, "--bootstrap-server", bs, "--group", group, "--topic", topic,
        "--reset-offsets", "--to-earliest", "--execute",
    )  # fmt: skip
    assert [group, topic, "0", "0"] in [ln.split() for ln in reset.splitlines()], reset
    deleted = tool(libs, main, "--bootstrap-server", bs, "--delete", "--group", group)
    assert "was successful" in deleted, deleted
    assert share_group_members(bs, group)[0] == "Dead"


def test_records_a_killed_consumer_held_come_back_after_the_lock(
    broker: Broker, worker_cp: str
) -> None:
    bs, topic, group = broker.bootstrap_servers, "jobs", "crashy"
    create_topic(bs, topic)
    values = [f"job-{i}" for i in range(40)]
    produce(bs, topic, values)
    lock = "share.record.lock.duration.ms=2000"
    holder = Worker(worker_cp, bs, topic, group, "hold", EARLIEST, lock)
    wait_for(lambda: holder.of("holding"), 60, "the holder to acquire records")
    held = {e["v"] for e in holder.msgs()}
    holder.kill()
    killed_at = time.monotonic()
    taker = Worker(worker_cp, bs, topic, group, "ack")
    wait_for(lambda: {e["v"] for e in taker.msgs()} >= set(values), 60, "every record")
    got = taker.msgs()
    assert Counter(e["v"] for e in got) == Counter(values), "each record once to the taker"
    redelivered = {e["v"]: e["dc"] for e in got if e["v"] in held}
    assert held and all(dc == 2 for dc in redelivered.values()), redelivered
    assert time.monotonic() - killed_at >= 1.5, "the held records waited for the lock"
    taker.stop()


def test_a_restart_keeps_acknowledged_state(tmp_path: Path, libs: str, worker_cp: str) -> None:
    data = tmp_path / "data"
    topic, group = "orders", "billing"
    before = [f"o-{i}" for i in range(20)] + ["reject-me"]
    with Broker(log_dirs=data, config=BROKER_CONFIG) as b:
        create_topic(b.bootstrap_servers, topic)
        produce(b.bootstrap_servers, topic, before)
        w = Worker(worker_cp, b.bootstrap_servers, topic, group, "ack", EARLIEST)
        wait_for(lambda: {e["v"] for e in w.msgs()} >= set(before), 60, "the first records")
        w.stop()
    # Kafka's kafka-dump-log decodes the share state written as Kafka writes it.
    segments = sorted(data.glob("__share_group_state-*/*.log"))
    dumped = ""
    for seg in segments:
        if seg.stat().st_size:
            dumped += tool(
                libs,
                "org.apache.kafka.tools.DumpLogSegments",
                "--files",
                str(seg),
                "--share-group-state-decoder",
            )
    # Record type 0 is ShareSnapshot; the last one has every record done with.
    snapshots = [ln for ln in dumped.splitlines() if '"type":"0"' in ln]
    assert snapshots and f'"groupId":"{group}"' in snapshots[-1], dumped[-2000:]
    assert f'"startOffset":{len(before)},' in snapshots[-1], snapshots[-1]
    with Broker(log_dirs=data, config=BROKER_CONFIG) as b:
        after = [f"n-{i}" for i in range(5)]
        produce(b.bootstrap_servers, topic, after)
        w = Worker(worker_cp, b.bootstrap_servers, topic, group, "ack")
        wait_for(lambda: {e["v"] for e in w.msgs()} >= set(after), 60, "the new records")
        time.sleep(1)
        assert Counter(e["v"] for e in w.msgs()) == Counter(after), "nothing acknowledged came back"
        w.stop()
