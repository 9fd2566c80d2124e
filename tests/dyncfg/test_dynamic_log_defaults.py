"""The log.* topic defaults change live, as Kafka's DynamicLogConfig does: a dynamic broker
value (cluster default or per broker, on a single node or pushed through ZooKeeper) reaches
every hosted log whose topic does not override the key, without a restart; DescribeConfigs
names the dynamic layer it comes from; a bad value is refused naming the key."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from kafkalite import Broker
from kafkalite.cluster import Cluster
from kafkalite.controller import entity_configs
from tests.dyncfg.test_broker_configs import admin, alter, describe, kafka_configs

HOUR_MS = 3_600_000
# Retention runs often so a change shows within a second or two (a read-only key).
STATIC = {"log.retention.check.interval.ms": "300"}
# Small segments (a topic override, so it is not the key under test) close often.
SMALL_SEGMENTS = {"segment.bytes": "1024"}


def create(client: AdminClient, name: str, assignment: list[list[int]] | None = None, **cfg: str):  # type: ignore[no-untyped-def]
    configs = {**SMALL_SEGMENTS, **{k.replace("_", "."): v for k, v in cfg.items()}}
    topic = (
        NewTopic(
            name, num_partitions=len(assignment), replica_assignment=assignment, config=configs
        )
        if assignment
        else NewTopic(name, num_partitions=1, config=configs)
    )
    client.create_topics([topic])[name].result(timeout=30)


def produce_old(bootstrap: str, topic: str, count: int = 40) -> None:
    """``count`` records stamped an hour ago: several closed segments under the default
    retention (7 days), all past a retention of a minute."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    then = int(time.time() * 1000) - HOUR_MS
    for i in range(count):
        producer.produce(topic, value=b"x" * 200, key=str(i).encode(), timestamp=then + i)
        producer.flush(10)
    assert producer.flush(10) == 0


def log_start(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dynlog-probe"})
    try:
        low, _high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return low
    finally:
        consumer.close()


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> float:
    """Seconds until ``check`` holds; fails past ``timeout_s``."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout_s, "not within the time allowed"
        time.sleep(0.2)
    return time.monotonic() - start


def topic_entry(client: AdminClient, topic: str, key: str):  # type: ignore[no-untyped-def]
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return client.describe_configs([resource])[resource].result(timeout=20)[key]


def test_a_cluster_default_retention_deletes_old_segments_live(
    kafkalite_broker_factory: Callable[..., Broker],
) -> None:
    broker = kafkalite_broker_factory(config=STATIC)
    bootstrap = broker.bootstrap_servers
    client = admin(broker)
    create(client, "aged")
    create(client, "kept", retention_ms=str(7 * 24 * HOUR_MS))
    for topic in ("aged", "kept"):
        produce_old(bootstrap, topic)
    time.sleep(1.0)  # a few retention passes under the default: nothing goes
    assert log_start(bootstrap, "aged") == 0

    kafka_configs(broker, "--entity-default", "--alter", "--add-config", "log.retention.ms=60000")
    took = eventually(lambda: log_start(bootstrap, "aged") > 0)
    print(f"old segments deleted {took:.1f}s after the cluster default changed")
    assert broker.running, "the same broker, never restarted"
    assert log_start(bootstrap, "kept") == 0, "a topic override keeps winning"

    entry = topic_entry(client, "aged", "retention.ms")
    assert (entry.value, ConfigSource(entry.source)) == (
        "60000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    synonym = entry.synonyms["log.retention.ms"]
    assert ConfigSource(synonym.source) == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    kept = topic_entry(client, "kept", "retention.ms")
    assert ConfigSource(kept.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    # Kafka's tool shows the layer too.
    out = kafka_configs(broker, "--entity-name", "1", "--describe", "--all")
    assert "log.retention.ms=60000" in out and "DYNAMIC_DEFAULT_BROKER_CONFIG" in out, out

    # A per-broker value wins over the cluster default; a new topic starts from it.
    alter(client, "1", AlterConfigOpType.SET, log_retention_ms="120000")
    create(client, "fresh")
    entry = topic_entry(client, "fresh", "retention.ms")
    assert (entry.value, ConfigSource(entry.source)) == (
        "120000",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [("log.retention.ms", "-5"), ("log.segment.bytes", "1"), ("log.cleanup.policy", "shred")],
)
def test_a_bad_log_default_is_refused_naming_the_key_and_nothing_changes(
    kafkalite_broker: Broker, key: str, value: str
) -> None:
    client = admin(kafkalite_broker)
    create(client, "t")
    before = {k: (e.value, e.source) for k, e in describe(client, "1").items()}
    topic_before = topic_entry(client, "t", key.removeprefix("log."))
    with pytest.raises(KafkaException) as e:
        alter(client, "1", AlterConfigOpType.SET, **{key.replace(".", "_"): value})
    error = e.value.args[0]
    # As Kafka 4.1.1 refuses a broker alteration.
    assert error.code() == KafkaError.INVALID_REQUEST, error
    assert key in error.str(), error
    out = kafka_configs(
        kafkalite_broker, "--entity-default", "--alter", "--add-config", f"{key}={value}", ok=False
    )
    assert key in out, out
    after = {k: (e.value, e.source) for k, e in describe(client, "1").items()}
    assert after == before
    topic_after = topic_entry(client, "t", key.removeprefix("log."))
    assert (topic_after.value, topic_after.source) == (topic_before.value, topic_before.source)


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(
        brokers=2,
        overrides={"zookeeper.session.timeout.ms": 6000, **STATIC},
        data_dir=tmp_path / "cluster",
    ) as cluster:
        yield cluster


def test_a_per_broker_value_pushed_through_zookeeper_reaches_the_hosting_broker(
    two_brokers: Cluster,
) -> None:
    cluster = two_brokers
    bootstrap = cluster.bootstrap_servers
    client = AdminClient({"bootstrap.servers": bootstrap})
    create(client, "on-two", assignment=[[2]])
    create(client, "on-one", assignment=[[1]])
    for topic in ("on-two", "on-one"):
        produce_old(bootstrap, topic)
    pids = [b.pid for b in cluster.brokers]
    time.sleep(1.0)  # a few retention passes under the default: nothing goes
    assert log_start(bootstrap, "on-two") == 0

    # Written straight into ZooKeeper with Kafka's change notification, as Kafka's own
    # `kafka-configs --zookeeper` did: broker 2's watch picks it up.
    entity_configs.set_keys(cluster.zk, "brokers", "2", {"log.retention.ms": "60000"})
    took = eventually(lambda: log_start(bootstrap, "on-two") > 0)
    print(f"broker 2 deleted its old segments {took:.1f}s after the ZooKeeper write")
    assert log_start(bootstrap, "on-one") == 0, "broker 1 keeps its own defaults"
    assert [b.pid for b in cluster.brokers] == pids, "no broker restarted"

    two = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap_servers})
    entry = describe(two, "2")["log.retention.ms"]
    assert (entry.value, ConfigSource(entry.source)) == (
        "60000",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
