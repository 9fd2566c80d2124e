"""The `kafkalite` command as a user runs it: the broker daemon and the client verbs."""

from __future__ import annotations

import os
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


def start_daemon(
    port: int, data: Path | None, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen:  # type: ignore[type-arg]
    log_dirs = ["--log-dirs", str(data)] if data is not None else []
    proc = subprocess.Popen(
        [*KAFKALITE, "broker", "--listeners", f"PLAINTEXT://127.0.0.1:{port}", *log_dirs, *extra],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    wait_for_port(port, proc)
    assert proc.stderr is not None
    ready = proc.stderr.readline()
    assert ready.startswith(f"kafkalite broker started on PLAINTEXT://127.0.0.1:{port}"), ready
    return proc


def user_topics(listed: str) -> list[str]:
    return [t for t in listed.split() if not t.startswith("__")]


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
    # The consumer's group made __consumer_offsets (FindCoordinator creates it, as Kafka's).
    assert user_topics(run("topic", "list", *bs).stdout) == []
    bad = run("topic", "create", "x", "-r", "3", *bs)
    assert bad.returncode != 0 and "replication factor" in bad.stderr


def test_verbs_report_errors_in_one_line(broker: Broker) -> None:
    bs = ["-b", broker.bootstrap_servers]
    for args, says in [
        (["topic", "describe", "nosuch"], "topic nosuch does not exist"),
        (["topic", "delete", "nosuch"], "cannot delete topic nosuch"),
        (["topic", "create", "t", "--config", "retention.ms"], "--config expects KEY=VALUE"),
        (["topic", "create", "t", "--config", "retention.ms=soon"], "retention.ms"),
        (["consume", "nosuch", "--from-beginning"], "topic nosuch does not exist"),
    ]:
        result = run(*args, *bs)
        assert result.returncode == 1, args
        assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
    # Asking about a topic must not create it (Metadata for one named topic would).
    assert user_topics(run("topic", "list", *bs).stdout) == []


def test_verbs_without_a_broker_fail_fast_and_say_so() -> None:
    bs = ["-b", f"127.0.0.1:{free_port()}", "--timeout", "2"]
    for args, stdin in [(["topic", "list"], None), (["produce", "t"], "x\n")]:
        result = run(*args, *bs, stdin=stdin, timeout=20)
        assert result.returncode == 1
        assert "is a broker running at" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "%3|" not in result.stderr


def test_produce_and_consume_bytes_that_are_not_utf8(broker: Broker) -> None:
    bs = ["-b", broker.bootstrap_servers]
    lines = b"k1=\xff\xfe\r\nk2=plain=with=equals\nno-key\n"
    produced = subprocess.run(
        [*KAFKALITE, "produce", "raw", "--key-separator", "=", *bs],
        input=lines,
        capture_output=True,
        timeout=30,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*KAFKALITE, "consume", "raw", "--from-beginning", "-n", "3", "--print-key", *bs],
        capture_output=True,
        timeout=30,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split(b"\n")[:3] == [
        b"k1\t\xff\xfe",
        b"k2\tplain=with=equals",
        b"\tno-key",
    ]


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
    # stop() closed the partition log cleanly, so the next start need not recover it.
    assert (tmp_path / "data" / "kept-0" / ".kafkalite-clean-shutdown").exists()
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
        (
            ["--override", "num.partitions=lots"],
            "Invalid value lots for configuration num.partitions",
        ),
        (
            ["--override", "num.partitions=3 # three"],
            "Invalid value 3 # three for configuration num.partitions",
        ),
        (
            ["--override", "auto.create.topics.enable=maybe"],
            "Invalid value maybe for configuration auto.create.topics.enable",
        ),
        (
            ["--listeners", "127.0.0.1:9092"],
            "Invalid value 127.0.0.1:9092 for configuration listeners",
        ),
        # A TLS listener without a keystore.
        (
            ["--listeners", "SSL://127.0.0.1:9093"],
            "Invalid value null for configuration ssl.keystore.location",
        ),
        (
            ["--override", "log.retention.ms=soon"],
            "Invalid value soon for configuration log.retention.ms",
        ),
        (
            ["--override", "log.retention.hours=-7"],
            "Invalid value -7 for configuration log.retention.hours",
        ),
        (["--override", "node.id=-1"], "Invalid value -1 for configuration node.id"),
        (
            ["--override", "log.segment.bytes=1"],
            "Invalid value 1 for configuration log.segment.bytes",
        ),
        (
            ["--override", "log.cleanup.policy=shred"],
            "Invalid value shred for configuration log.cleanup.policy",
        ),
        (
            ["--override", "log.message.timestamp.type=Now"],
            "Invalid value Now for configuration log.message.timestamp.type",
        ),
        (
            ["--override", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"],
            "Invalid value PLAINTEXT://0.0.0.0:9092 for configuration advertised.listeners",
        ),
        (["--override", "no-equals-sign"], "no-equals-sign"),
    ],
)
def test_config_errors_name_the_key_and_value(tmp_path: Path, args: list[str], named: str) -> None:
    """In Kafka's words (its ConfigException), so a search for the message finds Kafka's
    answers."""
    result = run("broker", "--log-dirs", str(tmp_path), *args, timeout=20)
    assert result.returncode == 2
    assert named in result.stderr


def test_server_properties_file(tmp_path: Path) -> None:
    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(
        "# comment\n"
        "! another comment \\\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        # Kafka's singular key; no log.dirs, so this must be the data dir.
        f"log.dir={tmp_path / 'data'}\n"
        "num.partitions : \\\n"
        "    4\n"
        "log.retention.hours=48\n"
        # Kafka ignores keys it does not know, with a warning; so does kafkalite.
        "log.retention.hourz=1\n"
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
        assert (tmp_path / "data" / "auto-0").is_dir()
    finally:
        proc.terminate()
        assert proc.wait(15) == 0
    assert proc.stderr is not None
    assert (
        "warning: The configuration 'log.retention.hourz' was supplied but isn't a known config."
        in proc.stderr.read()
    )


def test_config_file_errors(tmp_path: Path) -> None:
    missing = run("broker", "--config", str(tmp_path / "nope.properties"))
    assert missing.returncode == 2 and "nope.properties" in missing.stderr
    bad = tmp_path / "bad.properties"
    bad.write_text("log.dirs=/tmp/x\\u00zz\n")
    result = run("broker", "--config", str(bad))
    assert result.returncode == 2 and "malformed \\uxxxx" in result.stderr


def test_default_log_dir_is_under_xdg_data_home(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    proc = start_daemon(port, None, env=env)
    try:
        assert (tmp_path / "xdg" / "kafkalite" / "logs").is_dir()
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_second_daemon_on_the_same_log_dir_is_refused(tmp_path: Path) -> None:
    first = start_daemon(free_port(), tmp_path / "data")
    try:
        listeners = f"PLAINTEXT://127.0.0.1:{free_port()}"
        result = run("broker", "--listeners", listeners, "--log-dirs", str(tmp_path / "data"))
        assert result.returncode == 1
        assert "in use by another kafkalite broker" in result.stderr
        assert f"pid {first.pid}" in result.stderr
    finally:
        first.terminate()
        assert first.wait(15) == 0


def test_port_in_use_is_a_clear_error(broker: Broker, tmp_path: Path) -> None:
    listeners = f"PLAINTEXT://127.0.0.1:{broker.port}"
    result = run("broker", "--listeners", listeners, "--log-dirs", str(tmp_path / "other"))
    assert result.returncode == 1
    assert "cannot listen" in result.stderr
