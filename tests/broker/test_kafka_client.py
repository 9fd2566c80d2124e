"""`_core.KafkaClient` (the Rust Kafka client) against an embedded broker: metadata,
produce, list offsets, fetch of raw batches, and the exceptions its failures raise."""

from __future__ import annotations

import socket
import threading

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker, _core, errors

EARLIEST, LATEST = -2, -1


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def test_metadata_produce_list_offsets_and_fetch(broker: Broker) -> None:
    create_topic(broker.bootstrap_servers, "t", 2)
    with _core.KafkaClient(broker.bootstrap_servers, client_id="test") as client:
        meta = client.metadata(["t", "missing"])
        ((node, (host, port)),) = meta.brokers.items()
        assert f"{host}:{port}" == broker.bootstrap_servers
        assert meta.topics["missing"].error_code == 3
        t = meta.topics["t"]
        assert (t.error_code, t.is_internal) == (0, False)
        assert [(p.topic, p.partition, p.leader) for p in t.partitions] == [
            ("t", 0, node),
            ("t", 1, node),
        ]

        first = client.produce(
            "t", 1, _core.build_batch([(None, b"a"), (None, b"b")], timestamp_ms=1000)
        )
        second = client.produce(
            "t", 1, bytearray(_core.build_batch([(b"k", b"c")], timestamp_ms=2000)), acks=-1
        )
        assert (first.base_offset, second.base_offset) == (0, 2)

        asked = {("t", 1): EARLIEST, ("t", 0): LATEST}
        assert client.list_offsets(asked) == {("t", 1): 0, ("t", 0): 0}
        assert client.list_offsets({("t", 1): LATEST}) == {("t", 1): 3}
        assert client.list_offsets({("t", 1): 1500}) == {("t", 1): 2}

        fetched = client.fetch("t", 1, 1, 1 << 20)
        assert (fetched.error_code, fetched.high_watermark, fetched.log_start_offset) == (0, 3, 0)
        decoded = _core.decode_batches(fetched.records)
        assert [(r[0], r[3]) for r in decoded] == [(0, b"a"), (1, b"b"), (2, b"c")]
        assert client.fetch("t", 1, 50, 1 << 20).error_code == 1


def test_produce_batches_answers_each_partition_with_its_code(broker: Broker) -> None:
    create_topic(broker.bootstrap_servers, "multi", 3)
    with _core.KafkaClient(broker.bootstrap_servers) as client:
        big = _core.build_batch([(None, b"x" * 2_000_000)])
        answers = client.produce_batches(
            "multi",
            [
                (0, _core.build_batch([(None, b"a"), (None, b"b")])),
                (1, big),
                (2, bytearray(_core.build_batch([(b"k", b"c")]))),
                (9, _core.build_batch([(None, b"x")])),
            ],
            acks=-1,
        )
        # Partition errors are codes: MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION.
        assert sorted(answers) == [(0, 0, 0), (1, 10, -1), (2, 0, 0), (9, 3, -1)]
        assert client.produce_batches("multi", [(0, _core.build_batch([(None, b"d")]))]) == [
            (0, 0, 2)
        ]
        records = client.fetch("multi", 0, 0, 1 << 20).records
        assert [r[3] for r in _core.decode_batches(records)] == [b"a", b"b", b"d"]
        assert client.list_offsets({("multi", 1): LATEST}) == {("multi", 1): 0}


def test_broker_error_codes_raise_the_family(broker: Broker) -> None:
    create_topic(broker.bootstrap_servers, "t", 1)
    client = _core.KafkaClient(broker.bootstrap_servers)
    with pytest.raises(errors.BrokerError, match="error code 3") as info:
        client.produce("t", 9, _core.build_batch([(None, b"x")]))
    assert info.value.error_code == 3
    assert broker.bootstrap_servers in str(info.value)
    big = _core.build_batch([(None, b"x" * 2_000_000)])
    with pytest.raises(errors.MessageTooLargeError) as too_large:
        client.produce("t", 0, big)
    assert too_large.value.error_code == 10


def test_init_producer_id_and_a_stamped_batch(broker: Broker) -> None:
    create_topic(broker.bootstrap_servers, "t", 1)
    with _core.KafkaClient(broker.bootstrap_servers) as client:
        pid, epoch = client.init_producer_id()
        assert pid >= 0 and epoch == 0
        assert client.init_producer_id(timeout_ms=1000)[0] != pid
        # A transactional id: its own producer, the epoch bumped on every init.
        tpid, tepoch = client.init_producer_id("txn")
        assert tepoch == 0 and tpid != pid
        assert client.init_producer_id("txn") == (tpid, 1)
        with pytest.raises(errors.BrokerError) as refused:
            client.init_producer_id("txn", timeout_ms=1_000_000)
        assert refused.value.error_code == 50  # over transaction.max.timeout.ms
        stamped = _core.build_batch(
            [(None, b"a")], producer_id=pid, producer_epoch=epoch, base_sequence=0
        )
        # Header bytes 43..57: producer id, epoch, base sequence; the CRC covers them.
        assert stamped[43:57] == pid.to_bytes(8, "big") + bytes([0, 0, 0, 0, 0, 0])
        assert _core.crc32c(stamped[21:]) == int.from_bytes(stamped[17:21], "big")
        assert client.produce("t", 0, stamped).base_offset == 0
        plain = _core.build_batch([(None, b"a")])
        assert plain[43:57] == b"\xff" * 14


def test_unreachable_and_malformed_bootstrap_servers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"no broker reachable at 127.0.0.1:{port}"):
        _core.KafkaClient(f"127.0.0.1:{port}").metadata()
    with pytest.raises(ValueError, match="not host:port"):
        _core.KafkaClient("no-port-here")


def test_a_waiting_fetch_releases_the_gil(broker: Broker) -> None:
    create_topic(broker.bootstrap_servers, "t", 1)
    client = _core.KafkaClient(broker.bootstrap_servers)
    client.metadata(["t"])
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        fetched = client.fetch("t", 0, 0, 1 << 20, max_wait_ms=300)
    finally:
        stop.set()
        counter.join()
    assert fetched.records == b""
    assert ticks > 1000, "the counting thread never ran while the fetch waited"
