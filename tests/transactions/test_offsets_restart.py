"""Offsets sent with a transaction (TxnOffsetCommit) are written to ``__consumer_offsets``
as the producer's transactional batch, as Kafka writes them, so a broker restart between
``send_offsets_to_transaction`` and the transaction's end keeps them: after the restart
they are still pending (require_stable readers wait), the commit makes them the group's
offsets, and an abort (here: a new producer fencing the old one) drops them."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkalite import Broker
from kafkalite.controller.zookeeper import free_port
from tests.transactions.conftest import TXN_CONFIG
from tests.transactions.helpers import create


def committed(bs: str, group: str) -> int:
    reader = Consumer(
        {"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_committed"}
    )
    try:
        return reader.committed([TopicPartition("src", 0)], timeout=20)[0].offset
    finally:
        reader.close()


def is_pending(bs: str, group: str) -> bool:
    """require_stable: the broker answers UNSTABLE_OFFSET_COMMIT while an open transaction
    holds an offset of the partition (the client retries until its timeout)."""
    try:
        committed_offset = Consumer(
            {"bootstrap.servers": bs, "group.id": group, "isolation.level": "read_committed"}
        )
        committed_offset.committed([TopicPartition("src", 0)], timeout=2)
        committed_offset.close()
        return False
    except KafkaException:
        return True


def test_pending_transactional_offsets_survive_a_restart(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "data"

    def start() -> Broker:
        return Broker(log_dirs=data, port=port, config=TXN_CONFIG).start()

    b = start()
    bs = b.bootstrap_servers
    create(bs, "src", 1)
    create(bs, "dst", 1)
    group = Consumer({"bootstrap.servers": bs, "group.id": "txg"})
    meta = group.consumer_group_metadata()
    # No re-bootstrap while the broker is down: librdkafka would retire its broker handles,
    # and a later send_offsets_to_transaction waits forever on the retired handle its
    # coordinator cache still names (a client-side hang, not the broker's answer).
    p = Producer(
        {
            "bootstrap.servers": bs,
            "transactional.id": "tx-restart",
            "metadata.recovery.strategy": "none",
        }
    )
    p.init_transactions(30)

    # Commit across a restart.
    p.begin_transaction()
    p.produce("dst", value=b"one")
    p.send_offsets_to_transaction([TopicPartition("src", 0, 7)], meta, 20)
    p.flush(20)
    b.stop()
    b = start()
    assert is_pending(bs, "txg"), "the offsets came back pending from the log"
    p.commit_transaction(60)
    assert committed(bs, "txg") == 7

    # Abort across a restart: a new producer with the same id fences the old one, which
    # aborts the open transaction and drops its offsets.
    p.begin_transaction()
    p.produce("dst", value=b"two")
    p.send_offsets_to_transaction([TopicPartition("src", 0, 9)], meta, 20)
    p.flush(20)
    b.stop()
    b = start()
    assert is_pending(bs, "txg")
    fencer = Producer({"bootstrap.servers": bs, "transactional.id": "tx-restart"})
    fencer.init_transactions(60)
    assert committed(bs, "txg") == 7
    assert not is_pending(bs, "txg")
    with pytest.raises(KafkaException):
        p.commit_transaction(20)
    group.close()
    b.stop()
