"""Spark's own Kafka connector and kafkalite's source read the same topic from the same
kafkalite broker: the same rows, column for column."""

from __future__ import annotations

import json

import pytest

from tests.spark.helpers import create_topic, produce

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def test_same_rows_as_spark_kafka_connector(spark, jvm_connector, kafkalite_broker) -> None:
    if jvm_connector.unavailable:
        pytest.skip(f"Spark's Kafka connector is unavailable: {jvm_connector.unavailable}")
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "same", 3)
    rows = [
        (
            None if i % 7 == 0 else b"k%d" % i,
            b"v%d" % i,
            i % 3,
            [("h", b"%d" % i)] if i % 4 == 0 else None,
        )
        for i in range(6000)
    ]
    produce(bootstrap, "same", rows[:3000], compression="lz4")
    produce(bootstrap, "same", rows[3000:])

    def load(fmt: str):  # type: ignore[no-untyped-def]
        return (
            spark.read.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "same")
            .option("includeHeaders", "true")
            .option("startingOffsets", json.dumps({"same": {"0": 5, "1": -2, "2": -2}}))
            .load()
            .select(*COLUMNS)
        )

    ours, theirs = load("kafkalite"), load("kafka")
    assert ours.schema.simpleString() == theirs.schema.simpleString()
    assert ours.count() == theirs.count() == 6000 - 5
    assert ours.exceptAll(theirs).count() == 0
    assert theirs.exceptAll(ours).count() == 0
