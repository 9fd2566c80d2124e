"""Multi-broker systems under test: kafkalite's ``Cluster`` (N broker processes and a
private ZooKeeper) and an N-node Apache Kafka KRaft cluster, both on loopback.

They look like ``systems.BrokerProcess`` to the harness (``bootstrap``, ``start``,
``stop``, ``pid``, ``settings``, ``note``) and add ``pids()``: every broker process, so
the broker CPU of a phase is summed over all of them.

The cluster benches (failover, scale) also drive single brokers through one interface on
both: ``broker_ids``, ``broker_bootstrap(id)``, ``kill``/``pause``/``resume``/``restart``,
``controller_id()`` (kafkalite: the broker holding ``/controller``; Kafka: the active
KRaft controller) and ``process_pids()`` (every process the system runs, ZooKeeper too).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, ClassVar

from kafkalite.bench import kafka_ref
from kafkalite.bench.systems import BrokerProcess, free_port


class KafkaliteCluster:
    name = "kafkalite"
    note = ""

    # The throughput harness's settings; the cluster benches pass ``overrides={}``
    # (defaults are what they measure).
    HARNESS_OVERRIDES: ClassVar[dict[str, str]] = {
        "num.partitions": "1",
        "zookeeper.session.timeout.ms": "18000",
    }

    def __init__(
        self, data_dir: Path, brokers: int, overrides: Mapping[str, str] | None = None
    ) -> None:
        from kafkalite.cluster import Cluster

        self.data_dir = data_dir
        self.overrides = dict(self.HARNESS_OVERRIDES if overrides is None else overrides)
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

    @property
    def broker_ids(self) -> list[int]:
        return [b.broker_id for b in self.cluster.brokers]

    def broker_bootstrap(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id - 1].bootstrap_servers

    def kill(self, broker_id: int) -> None:
        self.cluster.brokers[broker_id - 1].kill()

    def pause(self, broker_id: int) -> None:
        self.cluster.brokers[broker_id - 1].pause()

    def resume(self, broker_id: int) -> None:
        self.cluster.brokers[broker_id - 1].resume()

    def restart(self, broker_id: int) -> None:
        """Start a killed broker again on its data (waits out its old ZooKeeper session,
        as ``ClusterBroker.restart`` does)."""
        self.cluster.brokers[broker_id - 1].restart()

    def controller_id(self) -> int:
        return self.cluster.controller_id()

    def process_pids(self) -> dict[str, int]:
        out = {f"broker-{b.broker_id}": b.pid for b in self.cluster.brokers if b.running}
        zk = self.cluster.zookeeper
        if zk is not None and zk._proc is not None:
            out["zookeeper"] = zk._proc.pid
        return out

    def log_files(self) -> dict[str, Path]:
        out = {f"broker-{b.broker_id}": b.data_dir / "broker.log" for b in self.cluster.brokers}
        if self.cluster.data_dir is not None:
            out["zookeeper"] = self.cluster.data_dir / "zookeeper"
        return out


# The Kafka of every side-by-side bench run (the conformance runner pins its own).
KAFKA_VERSION = kafka_ref.KAFKA_VERSION
RESTART_TIMEOUT_S = 900.0


class KafkaCluster:
    """N KRaft nodes, each broker and controller (a static quorum of all N), Kafka's
    defaults otherwise (replication factors of its internal topics follow N).
    ``overrides`` are keys for one node, by node id (1..N), over those."""

    name = "kafka"
    note = ""

    def __init__(
        self,
        data_dir: Path,
        brokers: int,
        version: str = KAFKA_VERSION,
        overrides: Mapping[int, Mapping[str, str]] | None = None,
    ):
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
            props.update((overrides or {}).get(i + 1, {}))
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
            if (pid := n.pid()) is not None:
                # A paused node would not see its SIGTERM; one that exited (and was
                # reaped by wait_ready's check) is gone already.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        for n in self.nodes:
            n.stop()

    def pids(self) -> list[int]:
        return [p for n in self.nodes if (p := n.pid()) is not None]

    def pid(self) -> int | None:
        pids = self.pids()
        return pids[0] if pids else None

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes]

    def broker_bootstrap(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.ports[broker_id - 1]}"

    def _signal(self, broker_id: int, sig: signal.Signals) -> None:
        pid = self.nodes[broker_id - 1].pid()
        if pid is not None:
            os.kill(pid, sig)

    def kill(self, broker_id: int) -> None:
        node = self.nodes[broker_id - 1]
        if node.proc is not None:
            node.proc.kill()
            node.proc.wait()
            node.proc = None

    def pause(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGCONT)

    def restart(self, broker_id: int, timeout: float = RESTART_TIMEOUT_S) -> None:
        """Start a killed node again on its data and wait until it answers Metadata: up
        to `timeout` seconds (a node loading 10,000 replicas on a loaded 2-core machine
        took longer than the 90 s a fresh start is given)."""
        from confluent_kafka.admin import AdminClient

        node = self.nodes[broker_id - 1]
        if node.proc is None or node.proc.poll() is not None:
            node.spawn()
        admin = AdminClient({"bootstrap.servers": node.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.proc is not None and node.proc.poll() is not None:
                raise RuntimeError(f"kafka node {broker_id} exited: {node.log_tail()}")
            try:
                if admin.list_topics(timeout=5).brokers:
                    return
            except Exception:  # not listening yet: KafkaException(_TRANSPORT)
                time.sleep(0.5)
        raise RuntimeError(f"kafka node {broker_id} not ready {timeout:g} s after its restart")

    def controller_id(self, via: int | None = None) -> int:
        """The active KRaft controller, as kafka-metadata-quorum's ``describe --status``
        reports it (LeaderId), asked of broker ``via`` (default: any running one); -1
        when the quorum has none."""
        ids = [via] if via is not None else [n.node_id for n in self.nodes if n.pid()]
        cmd = kafka_ref.tool_command(
            self.libs,
            "org.apache.kafka.tools.MetadataQuorumCommand",
            ["--bootstrap-server", self.broker_bootstrap(ids[0]), "describe", "--status"],
        )
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        found = re.search(r"^LeaderId:\s*(-?\d+)", done.stdout, re.MULTILINE)
        if found is None:
            raise RuntimeError(f"kafka-metadata-quorum: {(done.stdout + done.stderr)[-800:]}")
        return int(found.group(1))

    def process_pids(self) -> dict[str, int]:
        return {f"node-{n.node_id}": p for n in self.nodes if (p := n.pid()) is not None}

    def log_files(self) -> dict[str, Path]:
        return {f"node-{n.node_id}": n.log_path for n in self.nodes}


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

    @property
    def log_path(self) -> Path:
        return self.cluster.data_dir / f"kafka-node-{self.node_id}.log"

    def spawn(self) -> None:
        # Appended to: a restarted node's log follows its earlier life's.
        self._log = open(self.log_path, "ab")
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


def make_cluster(
    name: str, data_dir: Path, brokers: int, overrides: Mapping[str, str] | None = None
) -> KafkaliteCluster | KafkaCluster:
    """``overrides`` are kafkalite's broker settings (None: the throughput harness's;
    ``{}``: kafkalite's defaults); Kafka runs at its defaults either way."""
    if name == "kafkalite":
        return KafkaliteCluster(data_dir, brokers, overrides)
    if name == "kafka":
        return KafkaCluster(data_dir, brokers)
    raise ValueError(f"system {name!r} has no multi-broker launcher (kafkalite, kafka have)")
