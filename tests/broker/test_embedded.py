"""The embedded Broker's lifecycle: ephemeral port, temporary data dir, start/stop, config
errors, and the log-dir lock that keeps two brokers off the same files."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import Broker
from kafkalite.broker.embedded import LogDirInUseError
from kafkalite.errors import InvalidConfigError


def produce(bootstrap: str, topic: str, *values: bytes) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v)
    assert p.flush(10) == 0


def values(bootstrap: str, topic: str, n: int) -> list[bytes]:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[bytes] = []
    try:
        for _ in range(40):
            msgs = c.consume(n - len(out), timeout=0.5)
            out += [m.value() or b"" for m in msgs if m.error() is None]
            if len(out) >= n:
                break
    finally:
        c.close()
    return out


def test_default_broker_uses_an_ephemeral_port_and_a_temporary_dir() -> None:
    with Broker() as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) == b.port > 0
        (data,) = b.log_dirs
        assert data.is_dir()
        assert b.running
        socket.create_connection(("127.0.0.1", b.port), timeout=2).close()
        produce(b.bootstrap_servers, "t", b"x")
        assert values(b.bootstrap_servers, "t", 1) == [b"x"]
        assert repr(b).startswith(f"Broker({b.bootstrap_servers}")
    assert not data.exists(), "the temporary data dir is removed on exit"
    assert not b.running


def test_start_stop_without_with_and_stop_is_idempotent(tmp_path: Path) -> None:
    b = Broker(log_dirs=tmp_path / "data")
    assert not b.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = b.bootstrap_servers
    assert b.start() is b
    assert b.start() is b  # already running: a no-op, same port
    port = b.port
    produce(b.bootstrap_servers, "t", b"kept")
    b.stop()
    b.stop()
    assert not b.running
    assert (tmp_path / "data" / "t-0").is_dir(), "a given log dir is kept"
    # Started again on the same dir: the records are there (on a new ephemeral port).
    b.start()
    try:
        assert values(b.bootstrap_servers, "t", 1) == [b"kept"]
        assert b.port > 0 and isinstance(port, int)
    finally:
        b.stop()


def test_config_accepts_python_values_and_kafka_keys(tmp_path: Path) -> None:
    config = {"num.partitions": 3, "auto.create.topics.enable": True, "log.dirs": tmp_path}
    with Broker(config=config) as b:
        assert b.log_dirs == [tmp_path]
        produce(b.bootstrap_servers, "three", b"x")
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "unused"})
        assert len(c.list_topics("three", timeout=10).topics["three"].partitions) == 3
        c.close()
    assert tmp_path.is_dir(), "a dir from config is the user's: kept"


def test_fixed_port_and_config_listeners(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Broker(log_dirs=tmp_path / "a", port=port) as b:
        assert b.bootstrap_servers == f"127.0.0.1:{port}"
    listeners = f"PLAINTEXT://127.0.0.1:{port}"
    with Broker(log_dirs=tmp_path / "b", config={"listeners": listeners}) as b:
        assert b.port == port


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"num.partitions": "many"}, "Invalid value many for configuration num.partitions"),
        # A TLS listener without a keystore.
        (
            {"listeners": "SSL://127.0.0.1:0"},
            "Invalid value null for configuration ssl.keystore.location",
        ),
        ({"log.retention.hours": -5}, "Invalid value -5 for configuration log.retention.hours"),
    ],
)
def test_config_error_names_key_and_value_and_leaves_nothing_behind(
    config: dict[str, object], named: str
) -> None:
    b = Broker(config=config)
    with pytest.raises(InvalidConfigError, match=named.replace("/", ".")):
        with b:
            pass
    assert b.log_dirs == [] and not b.running


def test_log_dirs_and_config_log_dirs_together_are_ambiguous(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        Broker(log_dirs=tmp_path, config={"log.dirs": str(tmp_path)})


def test_two_brokers_cannot_share_a_log_dir(tmp_path: Path) -> None:
    with Broker(log_dirs=tmp_path) as first:
        produce(first.bootstrap_servers, "t", b"first")
        second = Broker(log_dirs=tmp_path)
        with pytest.raises(LogDirInUseError, match="in use by another kafkalite broker"):
            second.start()
        assert not second.running
        produce(first.bootstrap_servers, "t", b"still first")
    # Once the first has stopped, the dir is free and nothing was overwritten.
    with Broker(log_dirs=tmp_path) as again:
        assert values(again.bootstrap_servers, "t", 2) == [b"first", b"still first"]


def test_port_in_use_raises_oserror_and_releases_the_dir(tmp_path: Path) -> None:
    with Broker(log_dirs=tmp_path / "a") as first:
        clash = Broker(log_dirs=tmp_path / "b", port=first.port)
        with pytest.raises(OSError, match="cannot listen"):
            clash.start()
        # The failed start released its lock: another broker may use the dir.
        with Broker(log_dirs=tmp_path / "b"):
            pass


@pytest.mark.parametrize(
    ("broker_key", "value", "topic_key", "effective"),
    [
        ("log.retention.bytes", "12345", "retention.bytes", "12345"),
        ("log.retention.hours", "2", "retention.ms", "7200000"),
        ("log.segment.bytes", "1048576", "segment.bytes", "1048576"),
        ("message.max.bytes", "2000000", "max.message.bytes", "2000000"),
        ("log.message.timestamp.type", "LogAppendTime", "message.timestamp.type", "LogAppendTime"),
        ("log.cleanup.policy", "compact", "cleanup.policy", "compact"),
        ("log.cleaner.delete.retention.ms", "1000", "delete.retention.ms", "1000"),
        ("log.cleaner.min.cleanable.ratio", "0.1", "min.cleanable.dirty.ratio", "0.1"),
        ("log.cleaner.min.compaction.lag.ms", "5", "min.compaction.lag.ms", "5"),
        ("log.cleaner.max.compaction.lag.ms", "60000", "max.compaction.lag.ms", "60000"),
    ],
)
def test_broker_log_keys_are_topic_defaults(
    tmp_path: Path, broker_key: str, value: str, topic_key: str, effective: str
) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    with Broker(log_dirs=tmp_path, config={broker_key: value}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
        resource = ConfigResource("topic", "t")
        entry = admin.describe_configs([resource])[resource].result(10)[topic_key]
        assert entry.value == effective
        assert entry.source == 4  # STATIC_BROKER_CONFIG: from the broker's own key


def test_embedded_groups_form_without_kafkas_initial_delay(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    with Broker(log_dirs=tmp_path / "a") as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        resource = ConfigResource("broker", "1")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["group.initial.rebalance.delay.ms"].value == "0"
    with Broker(log_dirs=tmp_path / "b", config={"group.initial.rebalance.delay.ms": 3000}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["group.initial.rebalance.delay.ms"].value == "3000"
