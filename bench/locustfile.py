"""Mixed produce/consume load on any Kafka-compatible broker with Locust.

    kafkalite broker --listeners PLAINTEXT://127.0.0.1:9092 --log-dirs /tmp/kl &
    locust -f bench/locustfile.py --headless -u 20 -r 5 -t 60s --host 127.0.0.1:9092

Each simulated user owns a confluent-kafka producer and an assign()ed consumer. Every
acknowledged record fires a Locust request event ``kafka produce`` (send -> ack), every
consume() call one ``kafka consume`` event (its records and bytes), so Locust's tables,
charts and CSVs show Kafka latencies next to request rates. Settings via environment:
KAFKA_TOPIC (default locust-load), KAFKA_PARTITIONS (4), MESSAGE_BYTES (1024), KAFKA_ACKS (1).
librdkafka blocks outside gevent, so every call here is non-blocking (poll(0), consume with
a short timeout) and users yield with gevent.sleep.
"""

from __future__ import annotations

import os
import time

import gevent
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from locust import User, between, events, task

TOPIC = os.environ.get("KAFKA_TOPIC", "locust-load")
PARTITIONS = int(os.environ.get("KAFKA_PARTITIONS", "4"))
MESSAGE_BYTES = int(os.environ.get("MESSAGE_BYTES", "1024"))
ACKS = os.environ.get("KAFKA_ACKS", "1")
BURST = 50  # records per produce task


@events.test_start.add_listener
def create_topic(environment, **_kwargs) -> None:
    admin = AdminClient({"bootstrap.servers": environment.host})
    fut = admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])
    try:
        fut[TOPIC].result(30)
    except KafkaException as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise


class KafkaUser(User):
    """A producer and a consumer per user; produce three times as often as consume."""

    wait_time = between(0.01, 0.05)

    def on_start(self) -> None:
        servers = self.environment.host
        self.value = os.urandom(MESSAGE_BYTES)
        self.producer = Producer(
            {
                "bootstrap.servers": servers,
                "acks": ACKS,
                "linger.ms": 5,
                "enable.idempotence": False,
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": "locust-unused",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
        part = self.environment.runner.user_count % PARTITIONS if self.environment.runner else 0
        self.consumer.assign([TopicPartition(TOPIC, part, 0)])

    def on_stop(self) -> None:
        self.producer.flush(10)
        self.consumer.close()

    def _fire(self, name: str, started: float, length: int, exc: Exception | None) -> None:
        self.environment.events.request.fire(
            request_type="kafka",
            name=name,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=length,
            exception=exc,
            context={"topic": TOPIC},
        )

    @task(3)
    def produce(self) -> None:
        for _ in range(BURST):
            started = time.perf_counter()

            def delivered(err, msg, started=started) -> None:
                exc = KafkaException(err) if err is not None else None
                self._fire("produce", started, len(msg.value() or b""), exc)

            try:
                self.producer.produce(TOPIC, self.value, on_delivery=delivered)
            except BufferError as e:
                self._fire("produce", started, 0, e)
            self.producer.poll(0)
        # Let acknowledgements arrive without blocking the gevent loop.
        deadline = time.monotonic() + 5
        while len(self.producer) and time.monotonic() < deadline:
            self.producer.poll(0)
            gevent.sleep(0.001)

    @task(1)
    def consume(self) -> None:
        started = time.perf_counter()
        msgs = self.consumer.consume(500, timeout=0.01)
        errors = [m.error() for m in msgs if m.error() is not None]
        size = sum(len(m.value() or b"") for m in msgs if m.error() is None)
        exc = KafkaException(errors[0]) if errors else None
        if msgs:
            self._fire("consume", started, size, exc)
        gevent.sleep(0)
