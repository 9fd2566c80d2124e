"""Restart keeps every topic, config and record; ListOffsets by time; idempotent retries."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkalite import Broker, _core, errors


def produce(
    bootstrap: str, topic: str, n: int, ts0: int = 1_750_000_000_000, **conf: object
) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=ts0 + i * 10)
    assert p.flush(15) == 0


def consume_all(bootstrap: str, topic: str, partitions: int = 1) -> list[tuple[int, int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[int, int, bytes]] = []
    idle = 0
    while idle < 4:
        msgs = c.consume(1000, timeout=0.5)
        idle = 0 if msgs else idle + 1
        for m in msgs:
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.value()))
    c.close()
    return sorted(out)


def log_end(bootstrap: str, topic: str, partition: int = 0) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "enable.auto.commit": False})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        c.close()


def test_restart_keeps_topics_configs_and_records(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 3, 1, config={"retention.ms": "123456"})])[
            "kept"
        ].result(10)
        produce(b.bootstrap_servers, "kept", 300)
        before = consume_all(b.bootstrap_servers, "kept", 3)
    assert len(before) == 300
    with Broker(log_dirs=data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        topic = admin.list_topics("kept", timeout=10).topics["kept"]
        assert len(topic.partitions) == 3
        res = ConfigResource("topic", "kept")
        assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "123456"
        assert consume_all(b.bootstrap_servers, "kept", 3) == before
        produce(b.bootstrap_servers, "kept", 30)
        assert len(consume_all(b.bootstrap_servers, "kept", 3)) == 330


def test_list_offsets_by_time_earliest_latest(broker: Broker) -> None:
    ts0 = 1_750_000_000_000
    produce(broker.bootstrap_servers, "timed", 100, ts0=ts0)
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "x",
            "enable.auto.commit": False,
        }
    )
    found = c.offsets_for_times([TopicPartition("timed", 0, ts0 + 505)], timeout=10)
    assert found[0].offset == 51  # first record with timestamp >= ts0 + 505 is ts0 + 510
    found = c.offsets_for_times([TopicPartition("timed", 0, ts0)], timeout=10)
    assert found[0].offset == 0
    found = c.offsets_for_times([TopicPartition("timed", 0, ts0 + 10_000)], timeout=10)
    assert found[0].offset == -1  # none that late: OFFSET_END
    low, high = c.get_watermark_offsets(TopicPartition("timed", 0), timeout=10)
    assert (low, high) == (0, 100)
    c.close()


def test_idempotent_producer_end_to_end(broker: Broker) -> None:
    produce(broker.bootstrap_servers, "idem", 500, **{"enable.idempotence": True, "acks": "all"})
    got = consume_all(broker.bootstrap_servers, "idem")
    assert [o for _, o, _ in got] == list(range(500))


def test_replayed_batch_is_acknowledged_with_original_offsets(broker: Broker) -> None:
    produce(broker.bootstrap_servers, "replay", 3)  # creates the topic, offsets 0..2
    with _core.KafkaClient(broker.bootstrap_servers) as client:
        pid, epoch = client.init_producer_id()

        def batch(records: list[tuple[bytes, bytes]], seq: int) -> bytes:
            return _core.build_batch(
                records, producer_id=pid, producer_epoch=epoch, base_sequence=seq
            )

        first = batch([(b"a", b"1"), (b"b", b"2")], 0)
        assert client.produce("replay", 0, first, acks=-1).base_offset == 3
        assert log_end(broker.bootstrap_servers, "replay") == 5
        # The same bytes again, as a producer retrying after a lost response.
        assert client.produce("replay", 0, first, acks=-1).base_offset == 3
        assert log_end(broker.bootstrap_servers, "replay") == 5, "a replay must not append"
        second = batch([(b"c", b"3")], 2)
        assert client.produce("replay", 0, second, acks=-1).base_offset == 5
        gap = batch([(b"d", b"4")], 7)
        with pytest.raises(errors.KafkaliteError) as raised:
            client.produce("replay", 0, gap, acks=-1)
        assert raised.value.error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    got = consume_all(broker.bootstrap_servers, "replay")
    assert [v for _, _, v in got] == [b"v0", b"v1", b"v2", b"1", b"2", b"3"]
