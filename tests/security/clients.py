"""Each real client's round trip (produce N records, read them back) with a given
security setup, so a test says only who connects how."""

from __future__ import annotations

import subprocess
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

VALUES = [f"value-{i}" for i in range(5)]


def create_topic(conf: dict[str, str], topic: str) -> None:
    admin = AdminClient(conf)
    futures = admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)
    futures[topic].result(timeout=20)


def confluent_round_trip(conf: dict[str, str], topic: str) -> list[str]:
    errors: list[KafkaError] = []
    producer = Producer({**conf, "acks": "all", "error_cb": errors.append})
    delivered: list[object] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        delivered.append(err)

    for v in VALUES:
        producer.produce(topic, v.encode(), on_delivery=on_delivery)
    assert producer.flush(30) == 0, errors
    assert delivered == [None] * len(VALUES), delivered
    consumer = Consumer(
        {
            **conf,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "error_cb": errors.append,
        }
    )
    consumer.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 30
    while len(got) < len(VALUES) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value().decode())
    consumer.close()
    return got


def confluent_auth_error(conf: dict[str, str], timeout: float = 15.0) -> KafkaError:
    """The error a producer reports when it cannot authenticate."""
    errors: list[KafkaError] = []
    producer = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        producer.poll(0.2)
        # A refused client certificate shows as the TLS alert the broker sent (_TRANSPORT
        # under TLS 1.3, where the alert arrives after the client's handshake is done).
        fatal = [
            e
            for e in errors
            if e.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL)
            or (e.code() == KafkaError._TRANSPORT and "alert" in e.str())
        ]
        if fatal:
            return fatal[0]
    raise AssertionError(f"no authentication error, only {errors}")


def kafka_python_round_trip(kwargs: dict[str, object], topic: str) -> list[str]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(acks="all", **kwargs)  # type: ignore[arg-type]
    for v in VALUES:
        producer.send(topic, v.encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        group_id=None,
        **kwargs,  # type: ignore[arg-type]
    )
    got: list[str] = []
    # Stop once everything is in; the timeout only ends a read that came up short.
    for m in consumer:
        got.append(m.value.decode())
        if len(got) == len(VALUES):
            break
    consumer.close()
    return got


def kcat(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kcat", *args], input=stdin, capture_output=True, text=True, timeout=60)
