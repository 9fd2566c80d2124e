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


def raw_batches(bootstrap: str, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(bytes, producer id, base sequence, records) of every batch in the partition."""
    from kafkalite import _core

    out = []
    with _core.KafkaClient(bootstrap) as client:
        offset = 0
        while True:
            data = bytes(client.fetch(topic, partition, offset, 1 << 20).records)
            if not data:
                return out
            at = 0
            while at + 61 <= len(data):
                size = 12 + int.from_bytes(data[at + 8 : at + 12], "big")
                header = data[at : at + 61]
                out.append(
                    (
                        size,
                        int.from_bytes(header[43:51], "big", signed=True),
                        int.from_bytes(header[53:57], "big", signed=True),
                        int.from_bytes(header[57:61], "big"),
                    )
                )
                offset = int.from_bytes(header[0:8], "big") + out[-1][3]
                at += size
