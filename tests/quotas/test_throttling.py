"""A producer_byte_rate of 1 MB/s holds a confluent-kafka producer to within 10 % of
1 MB/s over 30 s; a consumer_byte_rate holds a consumer; the clients see throttle_time_ms
(librdkafka's throttle_cb)."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker
from tests.quotas.conftest import kafka_configs

QUOTA = 1_048_576  # bytes per second
MEASURE_S = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path_factory.mktemp("quotas")) as b:
        yield b


def create(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)


def test_producer_is_held_to_1_mb_per_second(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"produce-quota-{uuid.uuid4().hex[:6]}"
    create(bootstrap, topic)
    kafka_configs(
        bootstrap,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "capped-producer",
        "--add-config",
        f"producer_byte_rate={QUOTA}",
    )
    throttles: list[int] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "capped-producer",
            "linger.ms": 5,
            "batch.size": 65536,
            "queue.buffering.max.kbytes": 8192,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    value = b"x" * 4096
    delivered = [0]

    def on_delivery(err: object, msg: object) -> None:
        if err is None:
            delivered[0] += 1

    def produce_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)

    # Past the burst a quiet client may first send (the quota over the windows before the
    # current one, as Kafka allows): until the broker has throttled it once and for a
    # quota window after that.
    deadline = time.monotonic() + 40
    while not throttles and time.monotonic() < deadline:
        produce_for(0.5)
    assert throttles, "the producer was never throttled"
    produce_for(12.0)
    start_count, start = delivered[0], time.monotonic()
    produce_for(MEASURE_S)
    producer.flush(30)
    elapsed = time.monotonic() - start
    rate = (delivered[0] - start_count) * len(value) / elapsed
    print(f"measured producer rate {rate / 1e6:.3f} MB/s against a quota of {QUOTA / 1e6:.3f}")
    assert abs(rate / QUOTA - 1) <= 0.10, rate
    assert max(throttles) > 0


def test_consumer_byte_rate_throttles_a_consumer(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"consume-quota-{uuid.uuid4().hex[:6]}"
    create(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = b"y" * 10_000
    total = 1200  # 12 MB
    for _ in range(total):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush(60)
    quota = 1_000_000
    kafka_configs(
        bootstrap,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "capped-consumer",
        "--add-config",
        f"consumer_byte_rate={quota}",
    )
    throttled = threading.Event()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "client.id": "capped-consumer",
            "auto.offset.reset": "earliest",
            "throttle_cb": lambda event: throttled.set(),
        }
    )
    consumer.subscribe([topic])
    got, start = 0, time.monotonic()
    try:
        while got < total and time.monotonic() - start < 60:
            for msg in consumer.consume(500, 1.0):
                if msg.error() is None:
                    got += 1
    finally:
        consumer.close()
    elapsed = time.monotonic() - start
    assert got == total
    assert throttled.is_set(), "the consumer never saw throttle_time_ms"
    # 12 MB against 1 MB/s, less the burst a quiet client may take at once (10 windows).
    assert elapsed >= (total * len(value) - 10 * quota) / quota * 0.8, elapsed
    # Without a quota the same read takes well under a second.
    fast = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "client.id": "free-consumer",
            "auto.offset.reset": "earliest",
        }
    )
    fast.subscribe([topic])
    got, start = 0, time.monotonic()
    try:
        while got < total and time.monotonic() - start < 30:
            got += len([m for m in fast.consume(500, 1.0) if m.error() is None])
    finally:
        fast.close()
    assert got == total and time.monotonic() - start < elapsed / 2


def metadata_throttle_ms(sock: socket.socket, client_id: str, correlation_id: int) -> int:
    """Send Metadata v4 (no topics) as ``client_id``; the answer's throttle_time_ms."""
    name = client_id.encode()
    header = struct.pack(">hhih", 3, 4, correlation_id, len(name)) + name
    body = header + struct.pack(">ib", 0, 0)  # no topics, no auto-creation
    sock.sendall(struct.pack(">i", len(body)) + body)
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    answer = sock.recv(size, socket.MSG_WAITALL)
    correlation, throttle_ms = struct.unpack(">ii", answer[:8])
    assert correlation == correlation_id
    return throttle_ms


def test_request_percentage_is_reported_in_the_response(broker: Broker) -> None:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    kafka_configs(
        broker.bootstrap_servers,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "busy-client",
        "--add-config",
        "request_percentage=0.0001",
    )
    with socket.create_connection((host, int(port)), timeout=10) as busy:
        throttles: list[int] = []
        # Until three answers were throttled (each mutes the channel up to a second).
        while len(throttles) < 60 and sum(t > 0 for t in throttles) < 3:
            throttles.append(metadata_throttle_ms(busy, "busy-client", len(throttles)))
    # A handler's few microseconds are far past 0.0001 % of a thread: throttled soon, and,
    # as Kafka bounds a request-time throttle, never for more than one quota window.
    assert sum(t > 0 for t in throttles) == 3, throttles
    assert max(throttles) <= 1000, throttles
    with socket.create_connection((host, int(port)), timeout=10) as free:
        assert [metadata_throttle_ms(free, "free-client", i) for i in range(20)] == [0] * 20
