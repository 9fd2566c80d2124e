"""Fetch from follower (KIP-392) on a real 3-broker cluster, brokers 1, 2 and 3 in racks
r1, r2 and r3; 1 and 2 run Kafka's RackAwareReplicaSelector (``replica.selector.class``),
3 runs without one. Each broker serves its metrics, and its bytes out (Kafka's
``BytesOutPerSec``: record bytes sent to consumers, not to followers) show which broker a
consumer read from: librdkafka (confluent-kafka) with ``client.rack`` reads everything from
its rack's follower; the Java consumer does too, and keeps reading from it across a
leader change; a leader without the selector serves every rack itself."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.bench import kafka_ref
from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from kafkalite.controller.zookeeper import free_port
from kafkalite.monitoring import scrape
from tests.cluster.conftest import partitions, settled, wait_for

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "r1", 2: "r2", 3: "r3"}
RECORDS = 1000


class Racked:
    """The cluster and each broker's metrics URL."""

    def __init__(self, cluster: Cluster, metrics: dict[int, str]) -> None:
        self.cluster = cluster
        self.metrics = metrics

    def bytes_out(self, broker: int, topic: str) -> float:
        samples = scrape.fetch(self.metrics[broker])
        got = scrape.value(samples, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
        return got or 0.0

    def all_bytes_out(self, topic: str) -> dict[int, float]:
        return {b: self.bytes_out(b, topic) for b in RACKS}

    def leader(self, topic: str) -> int:
        data, _ = self.cluster.zk.get(znodes.partition_state_path(topic, 0))
        return znodes.parse_state(data).leader


@pytest.fixture(scope="module")
def racked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Racked]:
    ports = {b: free_port() for b in RACKS}
    per_broker: dict[int, dict[str, object]] = {
        b: {"broker.rack": rack, "metrics.listen": f"127.0.0.1:{ports[b]}"}
        for b, rack in RACKS.items()
    }
    for b in (1, 2):
        per_broker[b]["replica.selector.class"] = SELECTOR
    with Cluster(
        brokers=3,
        overrides={"zookeeper.session.timeout.ms": 6000, "replica.fetch.backoff.ms": 100},
        broker_overrides=per_broker,
        data_dir=tmp_path_factory.mktemp("fetch-from-follower"),
    ) as c:
        yield Racked(c, {b: f"http://127.0.0.1:{p}/metrics" for b, p in ports.items()})


def create(r: Racked, topic: str, replicas: list[int]) -> None:
    """One partition on `replicas` (the first leads), every replica in sync."""
    admin = AdminClient({"bootstrap.servers": r.cluster.bootstrap_servers})
    new = NewTopic(topic, num_partitions=1, replica_assignment=[replicas])
    admin.create_topics([new])[topic].result(30)
    bootstraps = [b.bootstrap_servers for b in r.cluster.brokers]
    settled(bootstraps, topic, 1)
    wait_for(lambda: sorted(partitions(bootstraps[0], topic)[0].isr) == sorted(replicas))


def produce(bootstrap: str, topic: str, numbers: range) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in numbers:
        p.produce(topic, str(i).encode(), partition=0)
    assert p.flush(30) == 0


def consume_with_rack(bootstrap: str, topic: str, rack: str, count: int) -> list[str]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ffr-{topic}",
            "enable.auto.commit": False,
            "client.rack": rack,
        }
    )
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[str] = []
    deadline = time.monotonic() + 60
    while len(out) < count and time.monotonic() < deadline:
        for m in c.consume(500, timeout=1):
            assert m.error() is None, m.error()
            out.append(m.value().decode())
    c.close()
    return out


def test_librdkafka_reads_every_record_from_its_racks_follower(racked: Racked) -> None:
    create(racked, "near", [1, 2, 3])
    produce(racked.cluster.bootstrap_servers, "near", range(RECORDS))
    got = consume_with_rack(racked.cluster.bootstrap_servers, "near", "r2", RECORDS)
    assert got == [str(i) for i in range(RECORDS)]
    out = racked.all_bytes_out("near")
    # The leader (1) only named the follower; 2 sent every record, 3 nothing.
    assert out[1] == 0 and out[3] == 0, out
    assert out[2] >= RECORDS * len(b"999"), out


def test_a_leader_without_the_selector_serves_every_rack(racked: Racked) -> None:
    create(racked, "far", [3, 1, 2])
    produce(racked.cluster.bootstrap_servers, "far", range(RECORDS))
    got = consume_with_rack(racked.cluster.bootstrap_servers, "far", "r2", RECORDS)
    assert got == [str(i) for i in range(RECORDS)]
    out = racked.all_bytes_out("far")
    assert out[1] == 0 and out[2] == 0, out
    assert out[3] >= RECORDS * len(b"999"), out


class JavaConsumer:
    """Kafka's console consumer (the Java client) on partition 0 from the beginning, with
    ``client.rack``; the values it prints, as they come."""

    def __init__(self, bootstrap: str, topic: str, rack: str, count: int) -> None:
        cmd = kafka_ref.tool_command(
            kafka_ref.ensure_jars(),
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            [
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--partition",
                "0",
                "--offset",
                "earliest",
                "--max-messages",
                str(count),
                "--timeout-ms",
                "90000",
                "--consumer-property",
                f"client.rack={rack}",
            ],
        )
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
        )
        self.values: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.values.append(line.rstrip("\n"))

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-3000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_the_java_consumer_keeps_reading_from_its_racks_follower_across_a_leader_change(
    racked: Racked,
) -> None:
    c = racked.cluster
    create(racked, "moving", [1, 2, 3])
    half = RECORDS // 2
    produce(c.bootstrap_servers, "moving", range(half))
    java = JavaConsumer(c.brokers[2].bootstrap_servers, "moving", "r3", RECORDS)
    try:
        wait_for(lambda: len(java.values) >= half, timeout=90)
        out = racked.all_bytes_out("moving")
        assert out[1] == 0 and out[2] == 0, out
        assert out[3] > 0, out

        # 1 shuts down: 2 (with the selector) leads and sends the consumer back to 3.
        c.brokers[0].stop()
        wait_for(lambda: racked.leader("moving") == 2, timeout=30)
        bootstraps = [b.bootstrap_servers for b in c.brokers[1:]]
        wait_for(lambda: all(partitions(b, "moving")[0].leader == 2 for b in bootstraps))
        # Until 3 has fetched from its new leader, 2 does not know it holds the consumer's
        # offset and would serve the consumer itself (as Kafka's leader would).
        time.sleep(1.5)
        produce(c.brokers[1].bootstrap_servers, "moving", range(half, RECORDS))
        assert java.wait(90) == 0, java.stderr()
    finally:
        java.kill()
    assert java.values == [str(i) for i in range(RECORDS)]
    assert racked.bytes_out(2, "moving") == 0
    assert racked.bytes_out(3, "moving") >= RECORDS * len(b"999")
