"""Every client we promise to work with produces and consumes (assign, no groups) with every
acks setting and codec: keys, headers and timestamps survive, offsets are dense and ordered."""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

import pytest

from kafkalite import Broker

N = 200
TS0 = 1_750_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
KCAT_P = ["kcat", "-P", "-K", "\t", "-H", "h=1", "-b"]
KCAT_C = ["kcat", "-C", "-e", "-q", "-f", "%o|%k|%s|%h|%T\n", "-b"]


def expected(i: int) -> tuple[int, bytes, bytes, int, list[tuple[str, bytes]]]:
    return (i, b"k%d" % i, b"value-%d-" % i * 8, TS0 + i, [("h", b"%d" % i)])


def check(
    got: list[tuple[int, bytes, bytes, int, list[tuple[str, bytes]]]], broker: Broker, topic: str
) -> None:
    assert [g[0] for g in got] == list(range(N)), "offsets dense and ordered"
    assert got == [expected(i) for i in range(N)]
    assert log_end(broker, topic) == N, "nothing written twice"


def log_end(broker: Broker, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        c.close()


def consume_confluent(bootstrap: str, topic: str) -> list:  # type: ignore[type-arg]
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[Any] = []
    try:
        for _ in range(200):
            if len(out) >= N:
                break
            for m in c.consume(N, timeout=0.5):
                assert m.error() is None, m.error()
                out.append(
                    (m.offset(), m.key(), m.value(), m.timestamp()[1], list(m.headers() or []))
                )
    finally:
        c.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_confluent_kafka(broker: Broker, acks: str, codec: str) -> None:
    from confluent_kafka import Producer

    topic = f"confluent-{acks}-{codec}"
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "acks": acks,
            "compression.type": codec,
            "linger.ms": 5,
            "enable.idempotence": False,
        }
    )
    for i in range(N):
        _, key, value, ts, headers = expected(i)
        p.produce(topic, key=key, value=value, headers=headers, timestamp=ts)
    assert p.flush(15) == 0
    check(consume_confluent(broker.bootstrap_servers, topic), broker, topic)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_kafka_python(broker: Broker, acks: int | str, codec: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"kafkapython-{acks}-{codec}"
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        acks=acks,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    for i in range(N):
        _, key, value, ts, headers = expected(i)
        p.send(topic, key=key, value=value, headers=headers, timestamp_ms=ts)
    p.flush(15)
    p.close()
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        consumer_timeout_ms=5000,  # iteration ends if records stop arriving
    )
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    for m in c:
        got.append((m.offset, m.key, m.value, m.timestamp, list(m.headers)))
        if len(got) == N:
            break
    c.close()
    check(got, broker, topic)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_aiokafka(broker: Broker, acks: int | str, codec: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = f"aiokafka-{acks}-{codec}"

    async def run() -> list:  # type: ignore[type-arg]
        p = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            acks=acks,
            compression_type=None if codec == "none" else codec,
        )
        await p.start()
        try:
            for i in range(N):
                _, key, value, ts, headers = expected(i)
                await p.send(topic, key=key, value=value, headers=headers, timestamp_ms=ts)
            await p.flush()
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        await c.start()
        out: list[Any] = []
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            while len(out) < N:
                batch = await asyncio.wait_for(c.getmany(tp, timeout_ms=500), 10)
                for m in batch.get(tp, []):
                    out.append((m.offset, m.key, m.value, m.timestamp, list(m.headers)))
        finally:
            await c.stop()
        return out

    check(asyncio.run(run()), broker, topic)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", ["0", "1", "-1"])
def test_kcat(broker: Broker, acks: str, codec: str) -> None:
    topic = f"kcat-{acks}-{codec}"
    sent_ms = int(time.time() * 1000)
    lines = "".join(f"k{i}\tvalue-{i}\n" for i in range(N))
    subprocess.run(
        [*KCAT_P, broker.bootstrap_servers, "-t", topic, "-z", codec, "-X", f"acks={acks}"],
        input=lines.encode(),
        check=True,
        timeout=30,
    )
    out = subprocess.run(
        [*KCAT_C, broker.bootstrap_servers, "-t", topic],
        check=True,
        capture_output=True,
        timeout=30,
    ).stdout.decode()
    rows = [line.split("|") for line in out.splitlines()]
    assert [int(r[0]) for r in rows] == list(range(N))
    assert [(r[1], r[2], r[3]) for r in rows] == [(f"k{i}", f"value-{i}", "h=1") for i in range(N)]
    # kcat cannot set timestamps: librdkafka stamps CreateTime when each record is produced.
    assert all(sent_ms - 1000 <= int(r[4]) <= sent_ms + 30_000 for r in rows)
    assert log_end(broker, topic) == N
