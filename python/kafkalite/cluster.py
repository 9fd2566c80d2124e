"""The local cluster: ``with Cluster(brokers=3) as c: c.bootstrap_servers``.

Starts a private ZooKeeper on loopback and N ``kafkalite broker`` processes registered in
it (separate processes, so a test can SIGKILL, pause or restart one as a real failure
would), each on its own fixed loopback port and data dir (a port another process takes
between its choice and the broker's bind is replaced: the broker is started again).
``overrides`` are broker keys given to every broker. ``listeners`` names each broker's
listeners (one loopback port each; the first is the client listener ``bootstrap_servers``
points at; their protocols come from ``listener.security.protocol.map`` in
``overrides``), ``client_config`` is what a client needs on the first one (e.g. SASL
credentials). Used by tests (the ``kafkalite_cluster`` fixture), notebooks, ``kafkalite
cluster up`` and the bench."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from kafkalite.controller import election, znodes
from kafkalite.controller.node import SESSION_TIMEOUT_MS
from kafkalite.controller.zookeeper import LocalZooKeeper, free_port

START_TIMEOUT_S = 60.0
# Ports are chosen (outside the ephemeral range) before the broker binds them, so another
# process may take one in between: the broker then fails to bind, and is started again on
# fresh ports, this many times at most.
PORT_ATTEMPTS = 5


class PortTakenError(RuntimeError):
    """A broker could not bind a port chosen for it (taken in between)."""


class ClusterBroker:
    """One broker process of a ``Cluster``."""

    def __init__(
        self,
        cluster: Cluster,
        broker_id: int,
        port: int,
        data_dir: Path,
        extra_ports: Mapping[str, int] | None = None,
    ) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.port = port
        # The ports of the listeners after the first, by name.
        self.extra_ports = dict(extra_ports or {})
        self.data_dir = data_dir
        self.proc: subprocess.Popen[bytes] | None = None
        # Where this incarnation's output starts in broker.log.
        self._log_start = 0
        # The ZooKeeper session of a killed incarnation, whose znode lingers until it
        # expires.
        self._dead_session = -1

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"broker {self.broker_id} is not running")
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _command(self) -> list[str]:
        settings = {
            "broker.id": str(self.broker_id),
            "listeners": ",".join(
                f"{name}://127.0.0.1:{port}"
                for name, port in [
                    (self.cluster.listeners[0], self.port),
                    *self.extra_ports.items(),
                ]
            ),
            "log.dirs": str(self.data_dir / "logs"),
            "zookeeper.connect": self.cluster.zookeeper_connect,
            "group.initial.rebalance.delay.ms": "0",
            **self.cluster.overrides,
            **self.cluster.broker_overrides.get(self.broker_id, {}),
        }
        wrap = self.cluster.broker_wrap(self.broker_id) if self.cluster.broker_wrap else []
        cmd = [*wrap, sys.executable, "-m", "kafkalite.cli", "broker"]
        for key, value in settings.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self) -> ClusterBroker:
        """Start the process and wait until it is registered in ZooKeeper."""
        if not self.running:
            self.spawn()
            self.wait_started()
        return self

    def wait_started(self) -> None:
        """``wait_registered``; a broker that lost a chosen port to another process is
        started again on fresh ones."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                self.wait_registered()
                return
            except PortTakenError:
                if attempt == PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port()
                self.extra_ports = {name: free_port() for name in self.extra_ports}
                self.spawn()

    def spawn(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.data_dir / "broker.log"
        self._log_start = log_path.stat().st_size if log_path.exists() else 0
        with open(log_path, "ab") as log:
            env = self.cluster.broker_env(self.broker_id) if self.cluster.broker_env else {}
            self.proc = subprocess.Popen(
                self._command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env} if env else None,
            )

    def wait_registered(self) -> None:
        zk = self.cluster.zk
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                if "Address already in use" in self._this_log():
                    raise PortTakenError(f"broker {self.broker_id}: {self.log_tail()}")
                raise RuntimeError(
                    f"broker {self.broker_id} exited with {self.proc.returncode}: {self.log_tail()}"
                )
            stat = zk.exists(znodes.broker_path(self.broker_id))
            if stat is not None and stat.ephemeralOwner != self._dead_session:
                return
            time.sleep(0.05)
        raise RuntimeError(f"broker {self.broker_id} did not register: {self.log_tail()}")

    def _this_log(self) -> str:
        try:
            with open(self.data_dir / "broker.log", "rb") as f:
                f.seek(self._log_start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self) -> str:
        try:
            return (self.data_dir / "broker.log").read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM and wait for the process to exit."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: the broker dies without leaving ZooKeeper; the others see its listener
        refuse connections and remove its registration at once (its session would only
        expire after zookeeper.session.timeout.ms)."""
        if self.proc is None:
            return
        stat = self.cluster.zk.exists(znodes.broker_path(self.broker_id))
        if stat is not None:
            self._dead_session = stat.ephemeralOwner
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def pause(self) -> None:
        """SIGSTOP: alive but silent, as a long GC pause or a hung host."""
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def restart(self) -> ClusterBroker:
        """Stop (if running), wait for the old registration to go, start again on the same
        port and data."""
        self.stop()
        zk = self.cluster.zk
        deadline = time.monotonic() + START_TIMEOUT_S + self.cluster.session_timeout_s
        while zk.exists(znodes.broker_path(self.broker_id)) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {self.broker_id}'s old session never expired")
            time.sleep(0.1)
        return self.start()


class Cluster:
    def __init__(
        self,
        brokers: int = 3,
        *,
        overrides: Mapping[str, object] | None = None,
        data_dir: str | Path | None = None,
        broker_wrap: Callable[[int], list[str]] | None = None,
        listeners: Sequence[str] = ("PLAINTEXT",),
        client_config: Mapping[str, str] | None = None,
        broker_overrides: Mapping[int, Mapping[str, object]] | None = None,
        broker_env: Callable[[int], Mapping[str, str]] | None = None,
    ) -> None:
        """``broker_wrap(broker_id)`` is a command prefix for that broker's process (it
        must exec the broker, keeping the pid), e.g. to start it in its own cgroup.
        ``broker_overrides`` are keys for one broker only, by broker id, over
        ``overrides`` (e.g. its own ``log.dirs`` on a mount of its own);
        ``broker_env(broker_id)`` adds variables to that broker's environment (e.g. a
        preloaded library), read at every start."""
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        if not listeners:
            raise ValueError("a cluster's brokers need at least one listener")
        self.size = brokers
        self.listeners = list(listeners)
        self.client_config = dict(client_config or {})
        self.overrides = {k: _kafka_value(v) for k, v in (overrides or {}).items()}
        self.broker_wrap = broker_wrap
        self.broker_overrides = {
            broker_id: {k: _kafka_value(v) for k, v in keys.items()}
            for broker_id, keys in (broker_overrides or {}).items()
        }
        self.broker_env = broker_env
        self._owns_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.zookeeper: LocalZooKeeper | None = None
        self._zk: KazooClient | None = None
        self.brokers: list[ClusterBroker] = []

    @property
    def zookeeper_connect(self) -> str:
        assert self.zookeeper is not None
        return self.zookeeper.connect

    @property
    def zk(self) -> KazooClient:
        if self._zk is None:
            raise RuntimeError("the cluster is not running")
        return self._zk

    @property
    def session_timeout_s(self) -> float:
        return int(self.overrides.get("zookeeper.session.timeout.ms", SESSION_TIMEOUT_MS)) / 1000

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers)

    def controller_id(self) -> int:
        """The broker holding /controller, -1 when there is none."""
        seat = election.current_controller(self.zk)
        return -1 if seat is None else seat[0]

    def start(self) -> Cluster:
        if self._zk is not None:
            return self
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafkalite-cluster-"))
        try:
            self.zookeeper = LocalZooKeeper(self.data_dir / "zookeeper").start()
            self._zk = KazooClient(hosts=self.zookeeper.connect)
            self._zk.start(timeout=30)
            self.brokers = [
                ClusterBroker(
                    self,
                    i,
                    free_port(),
                    self.data_dir / f"broker-{i}",
                    {name: free_port() for name in self.listeners[1:]},
                )
                for i in range(1, self.size + 1)
            ]
            # Start all, then wait for all: their startups overlap.
            for b in self.brokers:
                b.spawn()
            for b in self.brokers:
                b.wait_started()
            self._wait_controller()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_controller(self) -> None:
        """Until every broker's Metadata names all brokers and the controller: clients
        (librdkafka's admin client in particular) wait long for a controller they were
        told is unknown."""
        deadline = time.monotonic() + START_TIMEOUT_S
        for b in self.brokers:
            admin = AdminClient({"bootstrap.servers": b.bootstrap_servers, **self.client_config})
            while True:
                try:
                    md = admin.list_topics(timeout=5)
                except KafkaException:
                    # A broker registered but not yet sent the cluster's first snapshot
                    # answers with no brokers; librdkafka gives up on that after two
                    # retries ("Partial response"). Ask again.
                    md = None
                if md is not None and md.controller_id != -1 and len(md.brokers) == self.size:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"broker {b.broker_id} never saw the whole cluster")
                time.sleep(0.05)

    def stop(self) -> None:
        for b in self.brokers:
            if b.proc is not None and b.proc.poll() is None:
                b.resume()
                b.proc.send_signal(signal.SIGTERM)
        for b in self.brokers:
            b.stop()
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None
        if self._owns_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Cluster(brokers={self.size}, bootstrap_servers={self.bootstrap_servers!r})"


def _kafka_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
