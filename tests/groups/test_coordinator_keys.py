"""The group coordinator's broker keys from Kafka 4.1's `GroupCoordinatorConfig`:

- `group.coordinator.rebalance.protocols` without `consumer`: KIP-848 consumers are
  refused UNSUPPORTED_VERSION (librdkafka fails fatally on its ConsumerGroupHeartbeat, as
  against Kafka 4.1.1 with the same setting), classic groups work as before;
- `offsets.topic.compression.codec`: the coordinator's batches in `__consumer_offsets` are
  compressed with it (read back raw from the log);
- `offsets.load.buffer.size`: loading the groups at start reads the log in pieces of that
  size (at least one whole batch each), so even 1 byte loads every committed offset."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from kafkalite import Broker
from tests.broker import rawproto
from tests.groups.conftest import GROUP_CONFIG

CONSUMER_GROUP_DESCRIBE = 69
UNSUPPORTED_VERSION = 35


def group_describe_error(boot: str, group: str) -> int:
    """The group's error code in a ConsumerGroupDescribe v0 (hand-built, flexible)."""
    name = group.encode()
    body = rawproto.uvarint(2) + rawproto.uvarint(len(name) + 1) + name + b"\0" + b"\0"
    sock = rawproto.connect(boot)
    try:
        sock.sendall(rawproto.frame(rawproto.header_v2(CONSUMER_GROUP_DESCRIBE, 0, 1) + body))
        answer = rawproto.read_frame(sock)
    finally:
        sock.close()
    # correlation id, header tags, throttle time, groups (compact array), first error code.
    return int(struct.unpack(">h", answer[10:12])[0])


def kip848_consumer_errors(boot: str, seconds: float) -> list[KafkaError]:
    errors: list[KafkaError] = []
    consumer = Consumer(
        {
            "bootstrap.servers": boot,
            "group.id": "kip848",
            "group.protocol": "consumer",
            "error_cb": errors.append,
        }
    )
    try:
        consumer.subscribe(["protocols"])
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not errors:
            message = consumer.poll(0.2)
            if message is not None and message.error():
                errors.append(message.error())
    finally:
        consumer.close()
    return errors


def test_without_the_consumer_protocol_kip848_consumers_are_refused(tmp_path: Path) -> None:
    config = {**GROUP_CONFIG, "group.coordinator.rebalance.protocols": "classic"}
    with Broker(log_dirs=tmp_path / "classic", config=config) as classic:
        boot = classic.bootstrap_servers
        errors = kip848_consumer_errors(boot, 10)
        assert errors and errors[0].code() == KafkaError._FATAL, errors
        assert "ConsumerGroupHeartbeat" in errors[0].str(), errors[0].str()
        assert "not supported" in errors[0].str(), errors[0].str()
        assert group_describe_error(boot, "kip848") == UNSUPPORTED_VERSION
        # Classic groups are unaffected.
        producer = KafkaProducer(bootstrap_servers=boot)
        producer.send("protocols", b"v").get(timeout=20)
        producer.close()
        consumer = KafkaConsumer(
            "protocols", bootstrap_servers=boot, group_id="classic", auto_offset_reset="earliest"
        )
        try:
            got: list[bytes] = []
            deadline = time.monotonic() + 20
            while not got and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got += [r.value for r in records]
            assert got == [b"v"]
        finally:
            consumer.close()
    with Broker(log_dirs=tmp_path / "default", config=GROUP_CONFIG) as default:
        assert group_describe_error(default.bootstrap_servers, "kip848") != UNSUPPORTED_VERSION


def commit(boot: str, group: str, offsets: list[int]) -> None:
    """Commit each offset of `offsets` on partition 0 of `committed`, one commit each."""
    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition("committed", 0)])
        for offset in offsets:
            consumer.commit({TopicPartition("committed", 0): OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


def committed(boot: str, group: str) -> int | None:
    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=group, enable_auto_commit=False)
    try:
        return consumer.committed(TopicPartition("committed", 0))
    finally:
        consumer.close()


def offsets_batch_codecs(boot: str) -> set[int]:
    """The compression codec (attribute bits 0-2) of every batch in `__consumer_offsets`
    partition 0, read raw with a Fetch."""
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic="__consumer_offsets",
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    answer = rawproto.exchange(boot, request, FetchResponse, 11).responses[0].partitions[0]
    assert answer.error_code == 0, answer.error_code
    data, codecs = answer.records, set()
    while len(data) >= 23:
        (length,) = struct.unpack(">i", data[8:12])
        codecs.add(struct.unpack(">h", data[21:23])[0] & 0x7)
        data = data[12 + length :]
    return codecs


def test_offsets_topic_compression_codec_compresses_the_coordinators_batches(
    tmp_path: Path,
) -> None:
    one_partition = {**GROUP_CONFIG, "offsets.topic.num.partitions": 1}
    gzip = {**one_partition, "offsets.topic.compression.codec": 1}
    with (
        Broker(log_dirs=tmp_path / "gzip", config=gzip) as gz,
        Broker(log_dirs=tmp_path / "none", config=one_partition) as plain,
    ):
        for broker, codec in ((gz, 1), (plain, 0)):
            commit(broker.bootstrap_servers, "codec", [7, 9])
            assert committed(broker.bootstrap_servers, "codec") == 9
            assert offsets_batch_codecs(broker.bootstrap_servers) == {codec}


def test_groups_load_with_a_one_byte_offsets_load_buffer(tmp_path: Path) -> None:
    config = {**GROUP_CONFIG, "offsets.load.buffer.size": 1}
    with Broker(log_dirs=tmp_path / "data", config=config) as broker:
        commit(broker.bootstrap_servers, "loaded", [3, 5, 8])
    # Restarted: the group is loaded from the log, one batch per read.
    with Broker(log_dirs=tmp_path / "data", config=config) as broker:
        assert committed(broker.bootstrap_servers, "loaded") == 8
