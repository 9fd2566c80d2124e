"""Producing test data with confluent-kafka and remembering where each record landed."""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass
class Produced:
    #: (partition, offset) -> (key, value, headers)
    records: dict[tuple[int, int], tuple[bytes | None, bytes | None, list]] = field(
        default_factory=dict
    )


def create_topic(
    bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config=config or {})
    for future in admin.create_topics([new]).values():
        future.result(30)


def produce(
    bootstrap: str,
    topic: str,
    rows: list[tuple[bytes | None, bytes | None, int, list | None]],
    compression: str = "none",
    timestamp_ms: int | None = None,
) -> Produced:
    """Produce (key, value, partition, headers) rows; returns where each one landed."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": compression}
    )
    out = Produced()
    failures: list[str] = []

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            failures.append(str(err))
            return
        out.records[(msg.partition(), msg.offset())] = (
            msg.key(),
            msg.value(),
            [(k, v) for k, v in (msg.headers() or [])],
        )

    for i, (key, value, partition, headers) in enumerate(rows):
        kwargs = {"timestamp": timestamp_ms} if timestamp_ms is not None else {}
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=partition,
            headers=headers,
            on_delivery=delivered,
            **kwargs,
        )
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert not failures, failures[:3]
    assert len(out.records) == len(rows)
    return out
