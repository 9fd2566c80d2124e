"""The fixtures kafkalite ships through the pytest11 entry point, used as a user would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import Broker


def test_kafkalite_broker_fixture_serves_real_clients(kafkalite_broker: Broker) -> None:
    p = Producer({"bootstrap.servers": kafkalite_broker.bootstrap_servers})
    p.produce("fixture", key=b"k", value=b"v")
    assert p.flush(10) == 0
    # assign()-mode consumer: nothing to commit.
    conf = {"group.id": "unused", "enable.auto.commit": False}
    c = Consumer({"bootstrap.servers": kafkalite_broker.bootstrap_servers, **conf})
    c.assign([TopicPartition("fixture", 0, 0)])
    msgs = [m for m in c.consume(1, timeout=10) if m.error() is None]
    c.close()
    assert [(m.key(), m.value(), m.offset()) for m in msgs] == [(b"k", b"v", 0)]


def test_factory_applies_broker_config(kafkalite_broker_factory: Callable[..., Broker]) -> None:
    broker = kafkalite_broker_factory(config={"num.partitions": 3})
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce("three", b"x")
    assert p.flush(10) == 0
    conf = {"group.id": "unused", "enable.auto.commit": False}
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, **conf})
    assert len(c.list_topics("three", timeout=10).topics["three"].partitions) == 3
    c.close()


def test_factory_restarts_on_the_same_data(
    kafkalite_broker_factory: Callable[..., Broker], tmp_path: Path
) -> None:
    first = kafkalite_broker_factory(log_dirs=tmp_path / "shared")
    p = Producer({"bootstrap.servers": first.bootstrap_servers})
    p.produce("kept", b"x")
    assert p.flush(10) == 0
    first.stop()
    second = kafkalite_broker_factory(config={"log.dirs": str(tmp_path / "shared")})
    c = Consumer({"bootstrap.servers": second.bootstrap_servers, "group.id": "unused"})
    low, high = c.get_watermark_offsets(TopicPartition("kept", 0), timeout=10)
    c.close()
    assert (low, high) == (0, 1)
