"""One ``kafkalite broker`` daemon process on loopback, for the single-node faults and the
soak: started, SIGKILLed, SIGSTOPped and restarted on the same port and log dir, with its
RSS, open file descriptors and threads read from /proc.

A separate process (not the embedded ``Broker``) so a SIGKILL is a real crash of the whole
broker and /proc figures are the broker's alone, not the client's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from kafkalite.controller.zookeeper import free_port

START_TIMEOUT_S = 60.0


class Node:
    """``with Node(data_dir, overrides) as n: n.bootstrap_servers``."""

    def __init__(
        self,
        data_dir: Path,
        overrides: Mapping[str, object] | None = None,
        port: int = 0,
        log_dir: Path | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        # The broker's own output stays in data_dir: a log dir on a full disk must not
        # take the broker's stderr with it.
        self.log_dir = Path(log_dir) if log_dir else self.data_dir / "logs"
        self.port = port or free_port()
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.starts = 0
        self.last_start_s = 0.0  # spawn to listening, of the latest start

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("the broker is not running")
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        settings = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            "group.initial.rebalance.delay.ms": "0",
            **self.overrides,
        }
        cmd = [sys.executable, "-m", "kafkalite.cli", "broker"]
        for key, value in settings.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self) -> Node:
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.data_dir / "broker.log", "ab") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = started + START_TIMEOUT_S
        while not _listening(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker not listening after {START_TIMEOUT_S:g} s")
            time.sleep(0.02)
        self.last_start_s = time.monotonic() - started
        self.starts += 1
        return self

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return (self.data_dir / "broker.log").read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> None:
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
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def pause(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGCONT)

    def restart(self) -> Node:
        self.stop()
        self.restarts += 1
        return self.start()

    def usage(self) -> dict[str, int]:
        """RSS bytes, open fds and threads of the broker process, from /proc."""
        proc = Path(f"/proc/{self.pid}")
        status = dict(
            line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line
        )
        return {
            "rss_bytes": int(status["VmRSS"].split()[0]) * 1024,
            "threads": int(status["Threads"]),
            "fds": len(os.listdir(proc / "fd")),
        }

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0
