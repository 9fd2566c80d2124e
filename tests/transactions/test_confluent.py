"""confluent-kafka (librdkafka) transactional producers and read_committed consumers."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkalite import Broker
from tests.transactions.helpers import create, drain


def _producer(bootstrap: str, txn_id: str, **extra: object) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **extra})
    p.init_transactions(20)
    return p


def test_commit_and_abort_visibility(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "t", 2)
    p = _producer(bs, "tx-vis")
    p.begin_transaction()
    for i in range(6):
        p.produce("t", key=b"k", value=b"c1-%d" % i, partition=i % 2)
    p.commit_transaction(20)
    p.begin_transaction()
    for i in range(6):
        p.produce("t", key=b"k", value=b"ab-%d" % i, partition=i % 2)
    p.flush()
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce("t", key=b"k", value=b"c2", partition=0)
    p.commit_transaction(20)

    committed = sorted(m.value() for m in drain(bs, "t", 2, "read_committed"))
    assert committed == sorted([b"c1-%d" % i for i in range(6)] + [b"c2"])
    everything = drain(bs, "t", 2, "read_uncommitted")
    values = sorted(m.value() for m in everything)
    # Aborted data is there for read_uncommitted; control records never surface.
    assert values == sorted(
        [b"c1-%d" % i for i in range(6)] + [b"ab-%d" % i for i in range(6)] + [b"c2"]
    )
    # Three markers per partition 0 (and two on 1) sit between the data offsets.
    c = Consumer({"bootstrap.servers": bs, "group.id": "wm"})
    low, high = c.get_watermark_offsets(TopicPartition("t", 0), timeout=10)
    assert (low, high) == (0, 3 + 3 + 1 + 3)
    c.close()


def test_read_committed_stops_at_an_open_transaction(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "open", 1)
    p = _producer(bs, "tx-open")
    p.begin_transaction()
    p.produce("open", value=b"pending")
    p.flush()
    assert drain(bs, "open", 1, "read_committed", settle_s=1.0) == []
    assert [m.value() for m in drain(bs, "open", 1, "read_uncommitted", 1.0)] == [b"pending"]
    # ListOffsets: LATEST for read_committed is the LSO (0), for read_uncommitted the HW.
    c = Consumer({"bootstrap.servers": bs, "group.id": "lso", "isolation.level": "read_committed"})
    _, lso = c.get_watermark_offsets(TopicPartition("open", 0), timeout=10, cached=False)
    c.close()
    c = Consumer({"bootstrap.servers": bs, "group.id": "hw", "isolation.level": "read_uncommitted"})
    _, hw = c.get_watermark_offsets(TopicPartition("open", 0), timeout=10, cached=False)
    c.close()
    assert (lso, hw) == (0, 1)
    p.commit_transaction(20)
    assert [m.value() for m in drain(bs, "open", 1, "read_committed", 1.0)] == [b"pending"]


def test_an_old_producer_is_fenced_and_its_transaction_aborted(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "fence", 1)
    old = _producer(bs, "tx-fence")
    old.begin_transaction()
    old.produce("fence", value=b"zombie")
    old.flush()
    new = _producer(bs, "tx-fence")  # bumps the epoch and aborts the open transaction
    new.begin_transaction()
    new.produce("fence", value=b"fresh")
    new.commit_transaction(20)
    with pytest.raises(KafkaException) as fenced:
        old.produce("fence", value=b"late")
        old.commit_transaction(20)
    assert fenced.value.args[0].fatal() or "fenced" in str(fenced.value).lower()
    assert [m.value() for m in drain(bs, "fence", 1, "read_committed", 1.0)] == [b"fresh"]


def test_a_timed_out_transaction_is_aborted(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "slow", 1)
    p = _producer(bs, "tx-slow", **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce("slow", value=b"never")
    p.flush()
    deadline = time.monotonic() + 15
    c = Consumer({"bootstrap.servers": bs, "group.id": "slow", "isolation.level": "read_committed"})
    lso = 0
    while time.monotonic() < deadline and lso < 2:
        _, lso = c.get_watermark_offsets(TopicPartition("slow", 0), timeout=10, cached=False)
        time.sleep(0.3)
    c.close()
    assert lso == 2, "the coordinator aborts it: data + ABORT marker are stable"
    assert drain(bs, "slow", 1, "read_committed", 1.0) == []


def test_transactional_offsets_are_visible_only_on_commit(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "src", 1)
    create(bs, "dst", 1)
    group = Consumer({"bootstrap.servers": bs, "group.id": "txg"})
    meta = group.consumer_group_metadata()
    p = _producer(bs, "tx-offsets")
    for outcome in ("abort", "commit"):
        p.begin_transaction()
        p.produce("dst", value=outcome.encode())
        p.send_offsets_to_transaction([TopicPartition("src", 0, 7)], meta, 20)
        reader = Consumer(
            {"bootstrap.servers": bs, "group.id": "txg", "isolation.level": "read_committed"}
        )
        # require_stable: pending transactional offsets are not answered (the client
        # retries UNSTABLE_OFFSET_COMMIT until its timeout).
        with pytest.raises(KafkaException):
            reader.committed([TopicPartition("src", 0)], timeout=2)
        if outcome == "abort":
            p.abort_transaction(20)
            assert reader.committed([TopicPartition("src", 0)], timeout=10)[0].offset < 0
        else:
            p.commit_transaction(20)
            assert reader.committed([TopicPartition("src", 0)], timeout=10)[0].offset == 7
        reader.close()
    group.close()
