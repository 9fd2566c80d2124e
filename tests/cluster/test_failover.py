"""Failure detection: a broker whose process is gone is replaced at once, not when its
ZooKeeper session expires; a paused one only when its session expires.

The clusters here use a 30 s session timeout for the crash tests, so a leader replaced in
seconds can only have been replaced by the proof of the crash (its listener refusing
connections); the controller's own broker is among the victims. Every acknowledged write
is read back exactly once afterwards."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from kafkalite.controller.node import SESSION_TIMEOUT_MS
from tests.cluster.conftest import partitions, settled, wait_for

LONG_SESSION_MS = 30_000
# Far below LONG_SESSION_MS: what only the proof of a crash can explain.
FENCED_WITHIN_S = 10.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": LONG_SESSION_MS,
            "auto.leader.rebalance.enable": False,
            "offsets.topic.replication.factor": 3,
        },
        data_dir=tmp_path_factory.mktemp("failover"),
    ) as c:
        yield c


class Writer:
    """An idempotent acks=all producer writing numbered records until stopped; what was
    acknowledged is kept, to be read back."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: set[bytes] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.add(msg.value())  # type: ignore[attr-defined]

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                self._producer.produce(
                    self.topic,
                    f"r{n}".encode(),
                    key=str(n % 17).encode(),
                    on_delivery=self._delivered,
                )
                n += 1
            except BufferError:
                pass
            self._producer.poll(0.002)
        self._producer.flush(120)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(150)


def read_all(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    count = len(meta.topics[topic].partitions)
    consumer.subscribe([topic])
    values: list[bytes] = []
    ended: set[int] = set()
    deadline = time.monotonic() + 60
    while len(ended) < count:
        assert time.monotonic() < deadline, f"partitions {ended} of {count} reached their end"
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition())
            continue
        ended.discard(msg.partition())
        values.append(msg.value())
    consumer.close()
    return values


def leaders(c: Cluster, topic: str, broker_ids: list[int]) -> list[dict[int, int]]:
    return [
        {p: m.leader for p, m in partitions(c.brokers[b - 1].bootstrap_servers, topic).items()}
        for b in broker_ids
    ]


def create(c: Cluster, topic: str, count: int = 6) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(topic, count, 3, config={"min.insync.replicas": "2"})])[
        topic
    ].result(30)
    settled([b.bootstrap_servers for b in c.brokers], topic, count)


def kill_and_wait_for_new_leaders(c: Cluster, topic: str, victim_id: int) -> float:
    survivors = [b.broker_id for b in c.brokers if b.broker_id != victim_id]
    led = [p for p, leader in leaders(c, topic, survivors)[0].items() if leader == victim_id]
    started = time.monotonic()
    c.brokers[victim_id - 1].kill()

    def moved() -> bool:
        return all(
            all(view.get(p, -1) not in (victim_id, -1) for p in led)
            for view in leaders(c, topic, survivors)
        )

    wait_for(moved, timeout=FENCED_WITHIN_S, interval=0.02)
    return time.monotonic() - started


def test_a_killed_leader_and_a_killed_controller_are_replaced_at_once(cluster: Cluster) -> None:
    topic = "failover-kill"
    create(cluster, topic)
    with Writer(cluster.bootstrap_servers, topic) as writer:
        time.sleep(1)
        # A leader that is not the controller, then the controller's own broker.
        controller = cluster.controller_id()
        view = leaders(cluster, topic, [controller])[0]
        leader = next(b for b in view.values() if b != controller)
        for victim in (leader, controller):
            # Raises unless every survivor shows new leaders within FENCED_WITHIN_S.
            kill_and_wait_for_new_leaders(cluster, topic, victim)
            # Its registration went with the proof; a new controller sits when it was one.
            assert cluster.zk.exists(znodes.broker_path(victim)) is None
            wait_for(lambda v=victim: cluster.controller_id() not in (-1, v), timeout=5)
            # It starts again at once: its left-over registration is its own, proven dead.
            restarted = time.monotonic()
            cluster.brokers[victim - 1].start()
            assert time.monotonic() - restarted < LONG_SESSION_MS / 1000
            time.sleep(1)
    assert not writer.errors, writer.errors[:5]
    values = read_all(cluster.bootstrap_servers, topic)
    assert len(values) == len(set(values)), "duplicates"
    missing = writer.acked - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    assert len(writer.acked) > 100


def test_a_paused_broker_is_not_taken_for_dead(cluster: Cluster) -> None:
    """Its listener still accepts connections (the kernel does), so nothing is proven:
    it keeps its registration and its leaderships until its session expires."""
    topic = "failover-pause"
    create(cluster, topic)
    victim = cluster.brokers[0]
    before = cluster.zk.exists(znodes.broker_path(victim.broker_id))
    assert before is not None
    view = leaders(cluster, topic, [2])[0]
    os.kill(victim.pid, signal.SIGSTOP)
    try:
        time.sleep(6)
        still = cluster.zk.exists(znodes.broker_path(victim.broker_id))
        assert still is not None and still.ephemeralOwner == before.ephemeralOwner
        assert leaders(cluster, topic, [2])[0] == view
    finally:
        os.kill(victim.pid, signal.SIGCONT)


def test_a_hung_controller_is_replaced_when_its_session_expires_at_defaults(
    tmp_path: Path,
) -> None:
    """At the default session timeout a paused controller's broker, leading partitions
    under an acks=all load, loses its seat and its partitions within seconds, not Kafka's
    ZooKeeper-era 18 s; nothing acknowledged is lost."""
    with Cluster(brokers=3, data_dir=tmp_path / "defaults") as c:
        topic = "failover-hung"
        victim = c.brokers[c.controller_id() - 1]
        survivors = [b.broker_id for b in c.brokers if b is not victim]
        # The controller's broker first: it leads every partition.
        assignment = [[victim.broker_id, *survivors] for _ in range(3)]
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        new = NewTopic(
            topic,
            num_partitions=3,
            replica_assignment=assignment,
            config={"min.insync.replicas": "2"},
        )
        admin.create_topics([new])[topic].result(30)
        settled([b.bootstrap_servers for b in c.brokers], topic, 3)
        led = [0, 1, 2]
        assert all(b == victim.broker_id for b in leaders(c, topic, survivors)[0].values())
        with Writer(c.bootstrap_servers, topic) as writer:
            time.sleep(1)
            started = time.monotonic()
            os.kill(victim.pid, signal.SIGSTOP)
            try:

                def moved() -> bool:
                    return all(
                        all(view.get(p, -1) not in (victim.broker_id, -1) for p in led)
                        for view in leaders(c, topic, survivors)
                    )

                wait_for(moved, timeout=30, interval=0.05)
                took = time.monotonic() - started
                wait_for(lambda: c.controller_id() not in (-1, victim.broker_id), timeout=10)
            finally:
                os.kill(victim.pid, signal.SIGCONT)
            time.sleep(2)
        assert took < 18, f"{took:.1f} s: the default session timeout is not in force"
        # The session expires a timeout after the last ping ZooKeeper had, which came up to
        # a third of a timeout before the pause: earlier than that, something else moved it.
        least = SESSION_TIMEOUT_MS / 1000 * 2 / 3 * 0.9
        assert took >= least, f"{took:.1f} s: moved before its session could expire"
        values = read_all(c.bootstrap_servers, topic)
        assert len(values) == len(set(values)), "duplicates"
        assert not writer.acked - set(values), "acknowledged records lost"
