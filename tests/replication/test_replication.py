"""Replication on a real 3-broker cluster (`Cluster(brokers=3)`: a private ZooKeeper and
three `kafkalite broker` processes on loopback): followers copy the leader byte for byte,
acks=all survives a stopped follower and refuses to run below min.insync.replicas, the
ISR shrinks and grows back (as Kafka's own kafka-topics shows), and every acknowledged
record survives the loss of the leader."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import _core
from kafkalite.cluster import Cluster, ClusterBroker
from kafkalite.controller import znodes
from tests.cluster.conftest import partitions, settled, wait_for
from tests.cluster.test_cluster import create
from tests.cluster.test_java_tools import _tool

LAG_MS = 1500
NOT_ENOUGH_REPLICAS = _core.error_code("NOT_ENOUGH_REPLICAS")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": 6000,
            "replica.lag.time.max.ms": LAG_MS,
            "replica.fetch.backoff.ms": 100,
            "min.insync.replicas": 2,
        },
        data_dir=tmp_path_factory.mktemp("replication"),
    ) as c:
        yield c


def isr(c: Cluster, topic: str, partition: int = 0) -> list[int]:
    data, _ = c.zk.get(znodes.partition_state_path(topic, partition))
    return znodes.parse_state(data).isr


def leader(c: Cluster, topic: str, partition: int = 0) -> ClusterBroker:
    data, _ = c.zk.get(znodes.partition_state_path(topic, partition))
    lead = znodes.parse_state(data).leader
    return next(b for b in c.brokers if b.broker_id == lead)


def describe_isr(c: Cluster, bootstrap: str, topic: str, tmp: Path) -> list[int]:
    """The ISR of partition 0 as Kafka's kafka-topics --describe shows it. Short request
    timeouts: a stopped broker accepts connections but never answers, and the admin client
    must move on to another node rather than wait out its default 30 s."""
    config = tmp / "admin.properties"
    config.write_text("request.timeout.ms=3000\ndefault.api.timeout.ms=60000\n")
    out = _tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(config),
        "--describe",
        "--topic",
        topic,
    )
    shown = next(line for line in out.splitlines() if "Partition: 0" in line)
    return sorted(map(int, shown.split("Isr: ")[1].split()[0].split(",")))


def segment_bytes(b: ClusterBroker, topic: str, partition: int) -> bytes:
    d = Path(b.data_dir) / "logs" / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def batch(values: list[bytes]) -> bytes:
    return _core.build_batch([(None, v) for v in values])


def read_all(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"r-{topic}", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(out) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            out.append(m.value())
    c.close()
    return out


def test_followers_logs_equal_the_leaders(cluster: Cluster) -> None:
    create(cluster.bootstrap_servers, "copy", 2, 3)
    settled([b.bootstrap_servers for b in cluster.brokers], "copy", 2)
    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
            "enable.idempotence": True,
        }
    )
    acked: list[int] = []
    for i in range(3000):
        p.produce(
            "copy",
            f"v{i}".encode(),
            partition=i % 2,
            on_delivery=lambda e, m: e is None and acked.append(m.offset()),
        )
    assert p.flush(30) == 0
    assert len(acked) == 3000
    for part in (0, 1):
        # Same batches at the same offsets with the same epochs: the same bytes.
        def same(part: int = part) -> bool:
            logs = [segment_bytes(b, "copy", part) for b in cluster.brokers]
            return len(logs[0]) > 0 and logs.count(logs[0]) == 3

        wait_for(same, 20)
        lead = leader(cluster, "copy", part)
        checkpoints = {
            (Path(b.data_dir) / "logs" / f"copy-{part}" / "leader-epoch-checkpoint").read_text()
            for b in cluster.brokers
        }
        assert len(checkpoints) == 1, checkpoints
        got = read_all(lead.bootstrap_servers, "copy", part, 1500)
        assert got == [f"v{i}".encode() for i in range(part, 3000, 2)]


def test_acks_all_with_followers_stopped_and_the_isr_shrinking_and_growing(
    cluster: Cluster, tmp_path: Path
) -> None:
    create(cluster.bootstrap_servers, "isr", 1, 3)
    settled([b.bootstrap_servers for b in cluster.brokers], "isr", 1)
    lead = leader(cluster, "isr")
    # The first follower stopped is not the controller: kafka-topics --describe asks the
    # controller (ListPartitionReassignments) and is shown the ISR while only f1 is stopped.
    f1, f2 = sorted(
        (b for b in cluster.brokers if b is not lead),
        key=lambda b: b.broker_id == cluster.controller_id(),
    )
    with _core.KafkaClient(lead.bootstrap_servers) as client:
        client.produce("isr", 0, batch([b"a", b"b"]), acks=-1)
        assert sorted(isr(cluster, "isr")) == [1, 2, 3]

        f1.pause()
        try:
            started = time.monotonic()
            # Waits for the stopped follower until the leader drops it from the ISR.
            r = client.produce("isr", 0, batch([b"c"]), acks=-1, timeout_ms=30000)
            shrunk_after = time.monotonic() - started
            assert r.base_offset == 2
            assert sorted(isr(cluster, "isr")) == sorted([lead.broker_id, f2.broker_id])
            assert shrunk_after >= LAG_MS / 1000 * 0.9
            shown = describe_isr(cluster, lead.bootstrap_servers, "isr", tmp_path)
            assert shown == sorted([lead.broker_id, f2.broker_id])

            f2.pause()
            wait_for(lambda: isr(cluster, "isr") == [lead.broker_id], 15)
            # ... and the leader itself has the new ISR (its snapshot follows the znode).
            wait_for(
                lambda: list(partitions(lead.bootstrap_servers, "isr")[0].isr) == [lead.broker_id]
            )
            with pytest.raises(_core.KafkaliteError) as refused:
                client.produce("isr", 0, batch([b"refused"]), acks=-1, timeout_ms=5000)
            assert refused.value.error_code == NOT_ENOUGH_REPLICAS
            # acks=1 needs only the leader.
            assert client.produce("isr", 0, batch([b"d"]), acks=1).base_offset == 3
        finally:
            f1.resume()
            f2.resume()
        resumed = time.monotonic()
        wait_for(lambda: sorted(isr(cluster, "isr")) == [1, 2, 3], 30)
        print(f"\nfollowers rejoined the ISR {time.monotonic() - resumed:.2f} s after SIGCONT")
        client.produce("isr", 0, batch([b"e"]), acks=-1)

    assert describe_isr(cluster, cluster.bootstrap_servers, "isr", tmp_path) == [1, 2, 3]
    assert read_all(cluster.bootstrap_servers, "isr", 0, 5) == [b"a", b"b", b"c", b"d", b"e"]


def test_a_new_leader_has_every_acknowledged_record(cluster: Cluster) -> None:
    # Brokers stopped by an earlier test may still be registering again.
    wait_for(lambda: len(cluster.zk.get_children(znodes.BROKER_IDS)) == 3, 30)
    create(cluster.bootstrap_servers, "durable", 1, 3)
    settled([b.bootstrap_servers for b in cluster.brokers], "durable", 1)
    wait_for(lambda: sorted(isr(cluster, "durable")) == [1, 2, 3], 30)
    old = leader(cluster, "durable")
    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 60000,
        }
    )
    acked: list[bytes] = []
    errors: list[object] = []

    def delivered(e: object, m: object) -> None:
        if e is None:
            acked.append(m.value())  # type: ignore[attr-defined]
        else:
            errors.append(e)

    killed = threading.Event()
    acked_at_kill: list[int] = []

    def kill_when_half_acked() -> None:
        wait_for(lambda: len(acked) >= 1000, 30)
        old.kill()
        acked_at_kill.append(len(acked))
        killed.set()

    killer = threading.Thread(target=kill_when_half_acked)
    killer.start()
    for i in range(3000):
        p.produce("durable", f"n{i}".encode(), partition=0, on_delivery=delivered)
        p.poll(0)
        if i % 10 == 0:
            time.sleep(0.01)
    assert p.flush(90) == 0
    killer.join()
    assert killed.is_set()
    assert acked_at_kill[0] < 3000, "the leader died while records were in flight"
    new = wait_for(lambda: (b := leader(cluster, "durable")) is not old and b, 20)
    got = read_all(new.bootstrap_servers, "durable", 0, len(acked))
    lost = set(acked) - set(got)
    assert not lost, f"{len(lost)} acknowledged records lost"
    assert len(got) == len(set(got)), "duplicates"
    assert not errors, errors[:3]

    # The old leader comes back as a follower, truncates to the new leader's epoch and
    # catches up: the same log everywhere.
    old.restart()
    wait_for(lambda: sorted(isr(cluster, "durable")) == [1, 2, 3], 40)
    wait_for(
        lambda: len({segment_bytes(b, "durable", 0) for b in cluster.brokers}) == 1,
        20,
    )
