"""Kafka 4's record timestamp bounds (KIP-937, KIP-1030): a CreateTime more than
`message.timestamp.after.max.ms` (default 1 h) ahead of the broker, or more than
`message.timestamp.before.max.ms` behind it, is refused with INVALID_TIMESTAMP."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidTimestampError

from kafkalite import Broker


def send(boot: str, topic: str, timestamp_ms: int) -> None:
    producer = KafkaProducer(bootstrap_servers=boot, retries=0)
    try:
        producer.send(topic, b"v", timestamp_ms=timestamp_ms).get(timeout=20)
    finally:
        producer.close()


def test_future_and_past_timestamps_against_the_topic_bounds(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        admin.create_topics(
            [
                NewTopic("ts-default", 1, 1),
                NewTopic(
                    "ts-strict", 1, 1, topic_configs={"message.timestamp.before.max.ms": "60000"}
                ),
                NewTopic(
                    "ts-logtime", 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime"}
                ),
            ]
        )
    finally:
        admin.close()
    now = int(time.time() * 1000)
    send(boot, "ts-default", now + 10 * 60_000)  # within the hour
    send(boot, "ts-default", now - 30 * 86_400_000)  # before: unbounded by default
    with pytest.raises(InvalidTimestampError):
        send(boot, "ts-default", now + 2 * 3_600_000)
    with pytest.raises(InvalidTimestampError):
        send(boot, "ts-strict", now - 3_600_000)
    # The broker sets LogAppendTime itself: the producer's timestamp is not checked.
    send(boot, "ts-logtime", now + 2 * 3_600_000)
