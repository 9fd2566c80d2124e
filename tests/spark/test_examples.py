"""The examples in spark/, run in the test session's SparkSession: DataFrame -> topic,
topic -> Parquet (checked against a plain Kafka consumer's view of the topic), streaming
ingest and the per-key-per-minute counts."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.spark.helpers import create_topic

try:
    from pyspark.sql.streaming.datasource import ReadMaxRows  # noqa: F401

    ADMISSION_CONTROL = True
except ImportError:
    ADMISSION_CONTROL = False

EXAMPLES = Path(__file__).resolve().parents[2] / "spark"


@pytest.fixture(scope="module")
def examples():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield {
            name: importlib.import_module(name)
            for name in (
                "dataframe_to_topic",
                "topic_to_parquet",
                "stream_to_parquet",
                "windowed_counts",
            )
        }
    finally:
        sys.path.remove(str(EXAMPLES))


def consume_all(bootstrap: str, topic: str, partitions: int, total: int) -> set:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = set()
    try:
        while len(seen) < total:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(seen)} of {total} records consumed"
            assert msg.error() is None, msg.error()
            seen.add((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return seen


def test_examples_against_a_live_broker(spark, kafkalite_broker, examples, tmp_path) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "events", 3)
    generated = examples["dataframe_to_topic"].events(spark, 5000)
    examples["dataframe_to_topic"].write(generated, bootstrap, "events")

    out = str(tmp_path / "events.parquet")
    examples["topic_to_parquet"].ingest(spark, bootstrap, "events", out)
    table = pq.read_table(out)
    in_parquet = set(
        zip(
            (int(p) for p in table["partition"].to_pylist()),
            table["offset"].to_pylist(),
            table["key"].to_pylist(),
            table["value"].to_pylist(),
            strict=True,
        )
    )
    assert table.num_rows == 5000
    assert in_parquet == consume_all(bootstrap, "events", 3, 5000)

    query = examples["stream_to_parquet"].start(
        spark,
        bootstrap,
        "events",
        str(tmp_path / "stream"),
        str(tmp_path / "checkpoint"),
        available_now=True,
        # PySpark 4.0 has no admission control for Python sources (see the example).
        max_offsets_per_trigger=2000 if ADMISSION_CONTROL else None,
    )
    assert query.awaitTermination(120) is not False
    streamed = pq.read_table(tmp_path / "stream")
    streamed_positions = zip(
        streamed["partition"].to_pylist(), streamed["offset"].to_pylist(), strict=True
    )
    assert sorted(streamed_positions) == sorted((p, o) for p, o, _k, _v in in_parquet)

    batch = (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "events")
        .load()
    )
    counts = examples["windowed_counts"].counts_per_key_per_minute(batch).collect()
    assert sum(r["count"] for r in counts) == 5000
    assert {r.key for r in counts} == {f"user-{i}" for i in range(100)}
