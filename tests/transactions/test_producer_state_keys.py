"""The dynamic broker keys of Kafka's producer state (`DynamicProducerStateManagerConfig`),
changed with kafka-python's IncrementalAlterConfigs on the broker and taken up by the next
request:

- `transaction.partition.verification.enable` (KIP-890 part 1): a transactional batch sent
  with Produce v11 to a partition its transaction never added is refused
  TRANSACTION_ABORTABLE while it is on; off, it is appended unchecked (the transaction
  stays Empty), while v12 still adds the partition itself. Kafka 4.1.1 answers these four
  cases the same (checked side by side when this was written);
- `producer.id.expiration.ms`: an idempotent producer idle that long is forgotten: its
  next batch starts it afresh (a sequence gap is no longer OUT_OF_ORDER_SEQUENCE_NUMBER)
  and DescribeProducers no longer lists it.

The batches are built by hand (kafka-python's protocol classes over a plain socket) so
each can break the rules a client would keep."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from kafkalite import Broker, _core
from tests.broker import rawproto
from tests.transactions.conftest import TXN_CONFIG

TRANSACTION_ABORTABLE = _core.error_code("TRANSACTION_ABORTABLE")
OUT_OF_ORDER = _core.error_code("OUT_OF_ORDER_SEQUENCE_NUMBER")
ATTR_TRANSACTIONAL = 0x10


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path_factory.mktemp("producer-keys"), config=TXN_CONFIG) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        try:
            admin.create_topics([NewTopic("verified", 1, 1), NewTopic("idle", 1, 1)])
        finally:
            admin.close()
        yield b


def alter(broker: Broker, key: str, value: str | None) -> None:
    """Set `key` on broker 1 (its dynamic layer), or delete it (`None`)."""
    op = ("SET", value) if value is not None else ("DELETE", None)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        resource = ConfigResource(ConfigResourceType.BROKER, "1", configs={key: op})
        admin.alter_configs([resource], incremental=True)
    finally:
        admin.close()


def batch(pid: int, epoch: int, sequence: int, transactional: bool = False) -> bytes:
    b = bytearray(
        _core.build_batch(
            [(None, b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=sequence
        )
    )
    if transactional:
        attributes = struct.unpack(">h", b[21:23])[0] | ATTR_TRANSACTIONAL
        b[21:23] = struct.pack(">h", attributes)
        b[17:21] = struct.pack(">I", _core.crc32c(bytes(b[21:])))
    return bytes(b)


def init_producer_id(boot: str, transactional_id: str | None) -> tuple[int, int]:
    if transactional_id is not None:
        request = FindCoordinatorRequest(
            key=transactional_id, key_type=1, coordinator_keys=[transactional_id]
        )
        for _ in range(100):
            found = rawproto.exchange(boot, request, FindCoordinatorResponse, 4)
            if found.coordinators[0].error_code == 0:
                break
            time.sleep(0.1)
    request = InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout_ms=60000,
        producer_id=-1,
        producer_epoch=-1,
    )
    for _ in range(100):
        answer = rawproto.exchange(boot, request, InitProducerIdResponse, 4)
        if answer.error_code == 0:
            return answer.producer_id, answer.producer_epoch
        time.sleep(0.1)
    raise AssertionError(f"InitProducerId: {answer.error_code}")


def produce(boot: str, topic: str, records: bytes, version: int, txn: str | None = None) -> int:
    request = ProduceRequest(
        transactional_id=txn,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    answer = rawproto.exchange(boot, request, ProduceResponse, version)
    return int(answer.responses[0].partition_responses[0].error_code)


def transaction_state(broker: Broker, transactional_id: str) -> tuple[str, list[str]]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        d = admin.describe_transactions([transactional_id])[transactional_id]
    finally:
        admin.close()
    return d.state, [f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions]


def test_transaction_partition_verification_turns_off_and_on(broker: Broker) -> None:
    boot = broker.bootstrap_servers

    def unadded_write(name: str, version: int) -> int:
        pid, epoch = init_producer_id(boot, name)
        return produce(boot, "verified", batch(pid, epoch, 0, True), version, name)

    assert unadded_write("on-11", 11) == TRANSACTION_ABORTABLE
    assert unadded_write("on-12", 12) == 0
    alter(broker, "transaction.partition.verification.enable", "false")
    try:
        assert unadded_write("off-11", 11) == 0
        assert transaction_state(broker, "off-11") == ("Empty", [])
        assert unadded_write("off-12", 12) == 0
        assert transaction_state(broker, "off-12") == ("Ongoing", ["verified-0"])
    finally:
        alter(broker, "transaction.partition.verification.enable", None)
    assert unadded_write("on-again", 11) == TRANSACTION_ABORTABLE


def listed_producers(broker: Broker) -> list[int]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        states = admin.describe_producers([TopicPartition("idle", 0)])
    finally:
        admin.close()
    return [p.producer_id for p in states[TopicPartition("idle", 0)].active_producers]


def test_idle_producers_expire_after_producer_id_expiration_ms(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    pid, epoch = init_producer_id(boot, None)
    assert produce(boot, "idle", batch(pid, epoch, 0), 9) == 0
    # Known: a gap in its sequence is refused, and it is listed.
    assert produce(boot, "idle", batch(pid, epoch, 5), 9) == OUT_OF_ORDER
    assert listed_producers(broker) == [pid]
    alter(broker, "producer.id.expiration.ms", "1000")
    try:
        time.sleep(1.5)
        assert listed_producers(broker) == []
        # Forgotten: its next batch starts it afresh, whatever its sequence.
        assert produce(boot, "idle", batch(pid, epoch, 5), 9) == 0
        assert listed_producers(broker) == [pid]
    finally:
        alter(broker, "producer.id.expiration.ms", None)
