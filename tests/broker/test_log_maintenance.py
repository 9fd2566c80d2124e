"""Compaction and retention run by the broker, seen through real clients."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker

KEYS = 1_000
VERSIONS = 10
# Every 7th key ends with a tombstone.
DELETED = {k for k in range(KEYS) if k % 7 == 0}


def create(broker: Broker, topic: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(10)


def produce_versions(broker: Broker, topic: str, compression: str) -> dict[bytes, int]:
    """10 versions of 1,000 keys, then tombstones; returns the offset of each key's last write."""
    last: dict[bytes, int] = {}

    def delivered(err: KafkaError | None, msg: object) -> None:
        assert err is None, err
        last[msg.key()] = msg.offset()  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "compression.type": compression,
            "linger.ms": 5,
            "enable.idempotence": True,
        }
    )
    for version in range(VERSIONS):
        for k in range(KEYS):
            key = f"key-{k}".encode()
            producer.produce(
                topic, key=key, value=f"v{version}-{k}".encode(), partition=0, on_delivery=delivered
            )
        producer.flush(30)
    for k in sorted(DELETED):
        producer.produce(
            topic, key=f"key-{k}".encode(), value=None, partition=0, on_delivery=delivered
        )
    assert producer.flush(30) == 0
    return last


def read_all(broker: Broker, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes | None]] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
        raise AssertionError(f"no end of partition within 30 s ({len(out)} records read)")
    finally:
        consumer.close()


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_forced_compaction_keeps_the_latest_value_per_live_key(
    tmp_path: Path, compression: str
) -> None:
    # Small segments so the 10 versions span many; delete.retention.ms=0 lets a second pass
    # drop the tombstones the first one stamped.
    with Broker(log_dirs=tmp_path, config={"log.cleaner.enable": "false"}) as broker:
        create(
            broker,
            "table",
            1,
            **{"cleanup.policy": "compact", "segment.bytes": "65536", "delete.retention.ms": "0"},
        )
        last = produce_versions(broker, "table", compression)
        before = read_all(broker, "table")
        assert len(before) == KEYS * VERSIONS + len(DELETED)

        first = broker.compact("table")
        (topic, partition, stats) = first[0]
        assert (topic, partition) == ("table", 0)
        assert stats.skipped is None, stats
        assert stats.records_removed >= (VERSIONS - 1) * KEYS
        broker.compact("table")  # past the tombstones' delete horizon

        after = read_all(broker, "table")
        live = {k: off for k, off in last.items() if int(k.split(b"-")[1]) not in DELETED}
        assert {key: offset for offset, key, _ in after} == live
        assert all(value is not None for _, _, value in after)
        for _offset, key, value in after:
            assert value == f"v{VERSIONS - 1}-{int(key.split(b'-')[1])}".encode()
        # Offsets never change: every survivor is where the producer's ack put it.
        offsets = [offset for offset, _, _ in after]
        assert offsets == sorted(offsets)
        # And the log end does not move.
        assert max(last.values()) + 1 == high_watermark(broker, "table")


def high_watermark(broker: Broker, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hw"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_the_background_cleaner_compacts_dirty_partitions(tmp_path: Path) -> None:
    config = {"log.cleaner.backoff.ms": "100"}
    with Broker(log_dirs=tmp_path, config=config) as broker:
        create(
            broker,
            "table",
            1,
            **{
                "cleanup.policy": "compact",
                "segment.bytes": "16384",
                "min.cleanable.dirty.ratio": "0.01",
            },
        )
        # Batches well under segment.bytes, one per version: the 20 versions fill several
        # segments whatever the client's timing, and only the last stays active.
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50, "batch.size": 4096}
        )
        errors: list[KafkaError | None] = []
        for version in range(20):
            for k in range(100):
                producer.produce(
                    "table",
                    key=b"k%d" % k,
                    value=b"%d" % version + b"." * 20,
                    partition=0,
                    on_delivery=lambda e, _m: errors.append(e),
                )
            producer.flush(30)
        assert errors == [None] * 2000
        written = 20 * 100
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if len(read_all(broker, "table")) < written // 2:
                break
            time.sleep(0.3)
        records = read_all(broker, "table")
        assert len(records) < written // 2, "the cleaner never ran"
        # Each key's last value is still there (the active segment is never cleaned).
        latest = {key: value for _, key, value in records}
        assert latest == {b"k%d" % k: b"19" + b"." * 20 for k in range(100)}


def test_keyless_records_on_a_compacted_topic_are_refused(tmp_path: Path) -> None:
    with Broker(log_dirs=tmp_path) as broker:
        create(broker, "table", 1, **{"cleanup.policy": "compact"})
        errors: list[KafkaError] = []
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0})
        producer.produce("table", value=b"no key", on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(10)
        assert errors and errors[0] is not None
        assert errors[0].code() == KafkaError.INVALID_RECORD
        # The broker keeps serving keyed records.
        producer.produce(
            "table", key=b"k", value=b"v", on_delivery=lambda err, _msg: errors.append(err)
        )
        producer.flush(10)
        assert errors[1] is None


def test_retention_deletes_old_segments_in_the_background(tmp_path: Path) -> None:
    config = {"log.retention.check.interval.ms": "100"}
    with Broker(log_dirs=tmp_path, config=config) as broker:
        create(broker, "events", 1, **{"retention.ms": "500", "segment.bytes": "16384"})
        # Batches must fit the small segments (a larger one gets RECORD_LIST_TOO_LARGE).
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "batch.size": 4096}
        )
        errors: list[KafkaError] = []
        for _ in range(2000):
            producer.produce(
                "events", value=b"x" * 100, partition=0, on_delivery=lambda e, _m: errors.append(e)
            )
        assert producer.flush(30) == 0
        assert errors == [None] * 2000
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "w"})
        try:
            deadline = time.monotonic() + 20
            low = 0
            while time.monotonic() < deadline and low == 0:
                time.sleep(0.3)
                low, high = consumer.get_watermark_offsets(TopicPartition("events", 0), 10)
            assert low > 0, "retention never moved the log start"
            assert high == 2000
        finally:
            consumer.close()


def test_bad_cleaner_settings_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"log\.cleaner\.backoff\.ms"):
        Broker(log_dirs=tmp_path, config={"log.cleaner.backoff.ms": "0"}).start()
