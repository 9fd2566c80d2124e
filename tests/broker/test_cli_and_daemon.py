"""The `kafkalite` command as a user runs it: the broker daemon and the client verbs."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalite import Broker

KAFKALITE = [sys.executable, "-m", "kafkalite.cli"]


def run(*args: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(
        [*KAFKALITE, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "daemon exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("daemon did not listen in time")


def start_daemon(port: int, data: Path, *extra: str) -> subprocess.Popen:  # type: ignore[type-arg]
    proc = subprocess.Popen(
        [
            *KAFKALITE,
            "broker",
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{port}",
            "--log-dirs",
            str(data),
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, proc)
    return proc


def test_topic_produce_consume_verbs(broker: Broker) -> None:
    bs = ["-b", broker.bootstrap_servers]
    assert (
        run(
            "topic", "create", "orders", "-p", "3", "--config", "retention.ms=60000", *bs
        ).returncode
        == 0
    )
    assert run("topic", "list", *bs).stdout.split() == ["orders"]
    described = run("topic", "describe", "orders", *bs).stdout
    assert "PartitionCount: 3" in described and "retention.ms=60000" in described
    produced = run("produce", "orders", "--key-separator", ":", *bs, stdin="a:1\nb:2\nc:3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = run("consume", "orders", "--from-beginning", "-n", "3", "--print-key", *bs)
    assert sorted(consumed.stdout.splitlines()) == ["a\t1", "b\t2", "c\t3"]
    assert run("topic", "delete", "orders", *bs).returncode == 0
    assert run("topic", "list", *bs).stdout.split() == []
    bad = run("topic", "create", "x", "-r", "3", *bs)
    assert bad.returncode != 0 and "replication factor" in bad.stderr


def test_daemon_serves_kcat_stops_on_sigterm_and_keeps_data(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = start_daemon(port, tmp_path / "data")
    listing = subprocess.run(
        ["kcat", "-b", bootstrap, "-L"], capture_output=True, text=True, timeout=20
    )
    assert "1 brokers" in listing.stdout
    subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", "kept"],
        input="x\ny\n",
        text=True,
        check=True,
        timeout=20,
    )
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    proc = start_daemon(port, tmp_path / "data")
    out = subprocess.run(
        ["kcat", "-b", bootstrap, "-C", "-t", "kept", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert out.stdout.split() == ["x", "y"]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(15) == 0


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--override", "num.partitions=lots"], "num.partitions=lots"),
        (["--override", "auto.create.topics.enable=maybe"], "auto.create.topics.enable=maybe"),
        (["--listeners", "127.0.0.1:9092"], "listeners=127.0.0.1:9092"),
        (["--override", "log.retention.ms=soon"], "log.retention.ms=soon"),
    ],
)
def test_config_errors_name_the_key_and_value(tmp_path: Path, args: list[str], named: str) -> None:
    result = run("broker", "--log-dirs", str(tmp_path), *args, timeout=20)
    assert result.returncode == 2
    assert named in result.stderr


def test_server_properties_file(tmp_path: Path) -> None:
    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(
        "# comment\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "num.partitions : 4\n"
        "log.retention.hours=48\n"
    )
    proc = subprocess.Popen(
        [*KAFKALITE, "broker", "--config", str(props)], stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_port(port, proc)
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, ConfigResource

        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        p.produce("auto", b"v")
        assert p.flush(10) == 0
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        assert len(admin.list_topics("auto", timeout=10).topics["auto"].partitions) == 4
        res = ConfigResource("topic", "auto")
        retention = admin.describe_configs([res])[res].result(10)["retention.ms"]
        assert retention.value == str(48 * 3600 * 1000)
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_port_in_use_is_a_clear_error(broker: Broker, tmp_path: Path) -> None:
    listeners = f"PLAINTEXT://127.0.0.1:{broker.port}"
    result = run("broker", "--listeners", listeners, "--log-dirs", str(tmp_path / "other"))
    assert result.returncode == 1
    assert "cannot listen" in result.stderr
