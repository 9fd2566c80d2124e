"""The socket server's and request handlers' own bounds, Kafka 4.1's broker keys:
`fetch.max.bytes` caps every Fetch response (KIP-541), `max.request.partition.size.limit`
every DescribeTopicPartitions answer, `queued.max.request.bytes` the bytes of requests read
and not yet answered, and `socket.listen.backlog.size` the connections waiting to be
accepted. Each is shown on a broker that sets it beside one that keeps Kafka's default."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin.topics import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from kafkalite import Broker, _core
from tests.broker import rawproto

BATCHES = 8
VALUE = b"x" * 600  # one batch each: ~670 bytes, so two never fit in 1,024


def produce_batches(boot: str, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=boot, linger_ms=0)
    try:
        for _ in range(BATCHES):
            producer.send(topic, VALUE).get(timeout=20)
    finally:
        producer.close()


def fetch_batches(boot: str, topic: str) -> int:
    """Record batches in one Fetch asking for 50 MiB, as kafka-python sends it."""
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=50 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    response = rawproto.exchange(boot, request, FetchResponse, 11)
    (answer,) = response.responses[0].partitions
    assert answer.error_code == 0
    # One record per batch.
    return len(_core.decode_batches(answer.records))


def test_fetch_max_bytes_caps_a_fetch_that_asks_for_more() -> None:
    with Broker(config={"fetch.max.bytes": 1024}) as capped, Broker() as default:
        for broker in (capped, default):
            produce_batches(broker.bootstrap_servers, "capped")
        # The first batch goes out whole even past the cap (KIP-74); the next would not fit.
        assert fetch_batches(capped.bootstrap_servers, "capped") == 1
        assert fetch_batches(default.bootstrap_servers, "capped") == BATCHES


def describe_partitions(boot: str, limit: int) -> tuple[list[tuple[str, int]], Any]:
    request = DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name="wide")],
        response_partition_limit=limit,
        cursor=None,
    )
    response = rawproto.exchange(boot, request, DescribeTopicPartitionsResponse, 0)
    listed = [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
    return listed, response.next_cursor


def test_describe_topic_partitions_answers_at_most_the_brokers_limit() -> None:
    with Broker(config={"max.request.partition.size.limit": 3}) as capped, Broker() as default:
        for broker in (capped, default):
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
            try:
                admin.create_topics([NewTopic("wide", 5, 1)])
            finally:
                admin.close()
        listed, cursor = describe_partitions(capped.bootstrap_servers, 2000)
        assert listed == [("wide", 0), ("wide", 1), ("wide", 2)]
        assert (cursor.topic_name, cursor.partition_index) == ("wide", 3)
        # Below the broker's limit the request's own limit stands.
        listed, _ = describe_partitions(capped.bootstrap_servers, 2)
        assert len(listed) == 2
        listed, cursor = describe_partitions(default.bootstrap_servers, 2000)
        assert len(listed) == 5 and cursor is None


def metadata_answered(boot: str, timeout: float) -> bool:
    """Whether librdkafka's admin client gets a Metadata answer within `timeout`."""
    admin = AdminClient({"bootstrap.servers": boot})
    try:
        admin.list_topics(timeout=timeout)
        return True
    except Exception:
        return False


def test_queued_max_request_bytes_holds_requests_while_the_pool_is_spent() -> None:
    pool = 1 << 20
    settings = {"socket.request.max.bytes": pool, "queued.max.request.bytes": pool}
    with (
        Broker(config=settings) as bounded,
        Broker(config={"socket.request.max.bytes": pool}) as free,
    ):
        for broker, answered_while_held in ((bounded, False), (free, True)):
            # A request announced at the pool's whole size, half sent: its bytes are
            # reserved from the moment its size is read.
            slow = rawproto.connect(broker.bootstrap_servers)
            slow.sendall(struct.pack(">i", pool) + b"\0" * (pool // 2))
            time.sleep(0.3)
            assert metadata_answered(broker.bootstrap_servers, 2.0) is answered_while_held
            # The rest arrives (not a valid request: the broker closes that connection),
            # and the pool is free again.
            slow.sendall(b"\0" * (pool - pool // 2))
            assert rawproto.closed_by_peer(slow)
            slow.close()
            assert metadata_answered(broker.bootstrap_servers, 10.0)


def connects(port: int, attempts: int) -> int:
    """How many of `attempts` new connections complete their TCP handshake (0.5 s each);
    they stay open, unaccepted, while the next ones try."""
    opened: list[socket.socket] = []
    for _ in range(attempts):
        s = socket.socket()
        s.settimeout(0.5)
        try:
            s.connect(("127.0.0.1", port))
            opened.append(s)
        except OSError:
            s.close()
    for s in opened:
        s.close()
    return len(opened)


def test_the_listen_backlog_bounds_connections_waiting_to_be_accepted() -> None:
    # At max.connections the acceptor takes no more connections: the rest wait in the
    # listen queue, which holds socket.listen.backlog.size of them (Linux: one more).
    settings = {"max.connections": 1}
    with (
        Broker(config={**settings, "socket.listen.backlog.size": 1}) as small,
        Broker(config=settings) as default,
    ):
        for broker, waiting in ((small, (1, 2)), (default, (4,))):
            port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
            first = socket.create_connection(("127.0.0.1", port))  # accepted: the one slot
            time.sleep(0.2)
            assert connects(port, 4) in waiting
            first.close()
