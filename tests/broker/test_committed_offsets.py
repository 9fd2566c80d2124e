"""Committed offsets of assign()-mode consumers: commit, fetch with metadata, resume, and
survive a broker restart. (Group membership arrives with the group coordinator.)"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import Broker


def fill(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, b"v%d" % i)
    assert p.flush(10) == 0


def consumer(bootstrap: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "g1", **conf})


def test_commit_fetch_resume_and_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as b:
        fill(b.bootstrap_servers, "orders", 100)
        c = consumer(b.bootstrap_servers, **{"enable.auto.commit": False})
        c.assign([TopicPartition("orders", 0, 0)])
        got = []
        while len(got) < 40:
            got += [m for m in c.consume(40 - len(got), timeout=5) if m.error() is None]
        c.commit(offsets=[TopicPartition("orders", 0, 40, metadata="half-way")], asynchronous=False)
        committed = c.committed([TopicPartition("orders", 0)], timeout=10)
        assert (committed[0].offset, committed[0].metadata) == (40, "half-way")
        started = time.monotonic()
        c.close()
        assert time.monotonic() - started < 5, "closing must not wait on a missing coordinator"
        # A new consumer of the same group resumes at the committed offset.
        c = consumer(b.bootstrap_servers, **{"auto.offset.reset": "earliest"})
        c.assign([TopicPartition("orders", 0)])
        first = next(m for m in iter(lambda: c.poll(5), None) if m.error() is None)
        assert first.offset() == 40
        c.close()  # default auto-commit: commits its position on close
    with Broker(log_dirs=data) as b:
        c = consumer(b.bootstrap_servers)
        committed = c.committed([TopicPartition("orders", 0), TopicPartition("orders", 1)], 10)
        assert committed[0].offset >= 41
        assert committed[1].error is not None or committed[1].offset < 0
        c.close()


def test_kafka_python_commit_and_committed(broker: Broker) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    fill(broker.bootstrap_servers, "kp", 10)
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id="kpg", enable_auto_commit=False
    )
    tp = KTP("kp", 0)
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(7, "meta", -1)})
    assert c.committed(tp) == 7
    c.close()
