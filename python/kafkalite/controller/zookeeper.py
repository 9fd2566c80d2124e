"""A private ZooKeeper server on loopback, for tests, the local cluster and the bench.

kafkalite runs ZooKeeper from Debian's ``zookeeper`` package (``scripts/test.sh``
installs it): it ships the server jar with every dependency on its manifest's class path
and is updated with the OS, where Maven's jars would need a resolver and a pinned list of
transitive dependencies. ``KAFKALITE_ZOOKEEPER_CLASSPATH`` points at another install.
Each server gets its own data dir and a free port, so any number can run side by side.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

# Where Debian's zookeeper package puts the server jar (its manifest names the rest).
DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


class ZooKeeperNotInstalledError(RuntimeError):
    """Java or ZooKeeper's jars are missing."""


def _classpath() -> str:
    given = os.environ.get("KAFKALITE_ZOOKEEPER_CLASSPATH")
    if given:
        return given
    if DEBIAN_JAR.exists():
        return str(DEBIAN_JAR)
    raise ZooKeeperNotInstalledError(
        f"ZooKeeper is not installed: {DEBIAN_JAR} is missing. Install Debian's 'zookeeper' "
        "package (apt-get install zookeeper) or set KAFKALITE_ZOOKEEPER_CLASSPATH to the "
        "class path of a ZooKeeper server"
    )


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free loopback port outside the kernel's ephemeral range, so no outgoing
    connection (a follower's fetcher, a ZooKeeper client) can take it between now and the
    server's bind; a listener asked to bind port 0 would get one inside it."""
    low, high = _ephemeral_range()
    candidates = [p for p in range(10000, 65000) if not low <= p <= high]
    for port in random.sample(candidates, min(len(candidates), 200)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalZooKeeper:
    """``with LocalZooKeeper() as zk: zk.connect`` -- a standalone server on 127.0.0.1.

    ``tick_ms`` is ZooKeeper's unit of time: a session expires on the first tick after its
    timeout, so a short tick keeps the brokers' 4 s default from growing past 4.2 s; clients
    may negotiate from 2 ticks up to 60 s (Kafka's ZooKeeper-era 18 s default holds).
    """

    def __init__(
        self, data_dir: str | Path | None = None, *, port: int = 0, tick_ms: int = 200
    ) -> None:
        self._owns_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.tick_ms = tick_ms
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> LocalZooKeeper:
        if self._proc is not None:
            return self
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperNotInstalledError(
                "ZooKeeper needs Java: no 'java' on PATH (apt-get install openjdk-17-jre-headless)"
            )
        classpath = _classpath()
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="kafkalite-zk-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        conf = self.data_dir / "zoo.cfg"
        conf.write_text(
            "\n".join(
                [
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    f"tickTime={self.tick_ms}",
                    f"maxSessionTimeout={max(60 * self.tick_ms, 60000)}",
                    # A private server for tests and local clusters: skipping the fsync
                    # of every transaction keeps a loaded disk from stalling sessions
                    # (ZooKeeper's own test setups do the same).
                    "forceSync=no",
                    # No Jetty admin server: it would take port 8080.
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok",
                    "",
                ]
            )
        )
        log = open(self.data_dir / "zookeeper.log", "ab")
        try:
            self._proc = subprocess.Popen(
                [java, "-Xmx256m", "-cp", classpath, MAIN_CLASS, str(conf)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        finally:
            log.close()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self._proc.returncode}: {self._log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.connect} within {timeout} s")

    def _log_tail(self) -> str:
        assert self.data_dir is not None
        try:
            return (self.data_dir / "zookeeper.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._owns_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __enter__(self) -> LocalZooKeeper:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
