"""Multi-broker systems under test: kafkalite's ``Cluster`` (N broker processes and a
private ZooKeeper) and an N-node Apache Kafka KRaft cluster, both on loopback.

They look like ``systems.BrokerProcess`` to the harness (``bootstrap``, ``start``,
``stop``, ``pid``, ``settings``, ``note``) and add ``pids()``: every broker process, so
the broker CPU of a phase is summed over all of them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import IO

from kafkalite.bench import kafka_ref
from kafkalite.bench.systems import BrokerProcess, free_port


class KafkaliteCluster:
    name = "kafkalite"
    note = ""

    def __init__(self, data_dir: Path, brokers: int) -> None:
        from kafkalite.cluster import Cluster

        self.data_dir = data_dir
        self.overrides = {"num.partitions": "1", "zookeeper.session.timeout.ms": "18000"}
        self.cluster = Cluster(brokers, overrides=self.overrides, data_dir=data_dir)
        self.settings = {"brokers": str(brokers), **self.overrides}

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def start(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.cluster.start()

    def stop(self) -> None:
        self.cluster.stop()

    def pids(self) -> list[int]:
        return [b.pid for b in self.cluster.brokers if b.running]

    def pid(self) -> int | None:
        pids = self.pids()
        return pids[0] if pids else None


# The Kafka of the conformance runner (the newest cached reference).
KAFKA_VERSION = "4.1.1"


class KafkaCluster:
    """N KRaft nodes, each broker and controller (a static quorum of all N), Kafka's
    defaults otherwise (replication factors of its internal topics follow N)."""

    name = "kafka"
    note = ""

    def __init__(self, data_dir: Path, brokers: int, version: str = KAFKA_VERSION):
        self.data_dir = data_dir
        self.libs = kafka_ref.ensure_jars(version)
        self.ports = [free_port() for _ in range(brokers)]
        self.controller_ports = [free_port() for _ in range(brokers)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.controller_ports))
        self.nodes: list[_KafkaNode] = []
        for i in range(brokers):
            props = kafka_ref.server_properties(
                self.ports[i], self.controller_ports[i], data_dir / f"node-{i + 1}"
            )
            del props["controller.quorum.bootstrap.servers"]  # static voters instead
            rf = str(min(3, brokers))
            props.update(
                {
                    "node.id": str(i + 1),
                    "controller.quorum.voters": voters,
                    "offsets.topic.replication.factor": rf,
                    "transaction.state.log.replication.factor": rf,
                    "share.coordinator.state.topic.replication.factor": rf,
                }
            )
            self.nodes.append(_KafkaNode(self, i + 1, props))
        self.settings = {
            "version": version,
            "brokers": str(brokers),
            "heap": " ".join(kafka_ref.KAFKA_HEAP_OPTS),
            "jvm": " ".join(kafka_ref.KAFKA_JVM_OPTS),
        }

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def start(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir.mkdir(parents=True)
        cluster_id = kafka_ref._cluster_id()
        try:
            for n in self.nodes:
                n.format(cluster_id)
            for n in self.nodes:
                n.spawn()
            for n in self.nodes:
                n.wait_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()

    def pids(self) -> list[int]:
        return [p for n in self.nodes if (p := n.pid()) is not None]

    def pid(self) -> int | None:
        pids = self.pids()
        return pids[0] if pids else None


class _KafkaNode(BrokerProcess):
    name = "kafka"

    def __init__(self, cluster: KafkaCluster, node_id: int, props: dict[str, str]) -> None:
        super().__init__(cluster.data_dir / f"node-{node_id}")
        self.cluster = cluster
        self.node_id = node_id
        self.port = cluster.ports[node_id - 1]
        self.props = props
        self.config = cluster.data_dir / f"node-{node_id}.properties"
        self._log: IO[bytes] | None = None

    def format(self, cluster_id: str) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        kafka_ref.write_properties(self.config, self.props)
        cmd = kafka_ref.tool_command(
            self.cluster.libs,
            "kafka.tools.StorageTool",
            ["format", "-t", cluster_id, "-c", str(self.config)],
        )
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"kafka storage format failed: {(done.stdout + done.stderr)[-1500:]}"
            )

    def spawn(self) -> None:
        self._log = open(self.cluster.data_dir / f"kafka-node-{self.node_id}.log", "wb")
        self.proc = subprocess.Popen(
            kafka_ref.broker_command(self.cluster.libs, self.config),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log_tail(self) -> str:
        log = self.cluster.data_dir / f"kafka-node-{self.node_id}.log"
        try:
            return log.read_bytes()[-1500:].decode(errors="replace")
        except OSError:
            return ""


def make_cluster(name: str, data_dir: Path, brokers: int) -> KafkaliteCluster | KafkaCluster:
    if name == "kafkalite":
        return KafkaliteCluster(data_dir, brokers)
    if name == "kafka":
        return KafkaCluster(data_dir, brokers)
    raise ValueError(f"system {name!r} has no multi-broker launcher (kafkalite, kafka have)")
