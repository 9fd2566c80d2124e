"""A broker out of file descriptors says so (once in a while, not per accept), keeps
serving the connections it has, and accepts again once descriptors are free."""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

from kafkalite import _core
from tests.broker.test_cli_and_daemon import KAFKALITE, free_port, wait_for_port

FD_LIMIT = 200


def daemon_with_nofile(
    tmp_path: Path, soft: int, hard: int, stderr: int
) -> tuple[int, subprocess.Popen]:  # type: ignore[type-arg]
    """The broker daemon on a free port, started under RLIMIT_NOFILE (soft, hard)."""
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    proc = subprocess.Popen(
        [
            *KAFKALITE,
            "broker",
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{port}",
            "--log-dirs",
            str(tmp_path / "data"),
            # Room in the listen backlog for every client the broker cannot accept (Kafka's
            # default backlog, 50, would time the last ones out).
            "--override",
            "socket.listen.backlog.size=1024",
        ],
        stderr=stderr,
        text=True,
        preexec_fn=limit,
    )
    return port, proc


def test_fd_exhaustion_is_logged_once_and_recovers(tmp_path: Path) -> None:
    port, proc = daemon_with_nofile(tmp_path, FD_LIMIT, FD_LIMIT, subprocess.PIPE)
    clients: list[socket.socket] = []
    try:
        wait_for_port(port, proc)
        # More connections than the broker has descriptors: the kernel queues the rest in
        # the listen backlog, and the broker's accept fails with EMFILE.
        for _ in range(FD_LIMIT + 50):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(1.5)
        for c in clients:
            c.close()
        clients.clear()
        # Descriptors are back: a new client is served.
        deadline = time.monotonic() + 15
        while True:
            try:
                client = _core.KafkaClient(f"127.0.0.1:{port}")
                assert client.metadata() is not None
                break
            except Exception:
                assert time.monotonic() < deadline, "not served after descriptors came back"
                time.sleep(0.2)
    finally:
        for c in clients:
            c.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    reports = [line for line in err.splitlines() if "out of file descriptors" in line]
    # Some 30 failed accepts in 1.5 s, reported in one line (one per 10 s at most).
    assert len(reports) == 1, err
    assert f"127.0.0.1:{port} (PLAINTEXT)" in reports[0]
