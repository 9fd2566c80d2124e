"""The sink: a DataFrame written to a topic reads back the same, in batch and streaming."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from tests.spark.helpers import create_topic


def read_topic(spark, bootstrap: str, topic: str):  # type: ignore[no-untyped-def]
    return (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )


def test_batch_write_round_trip(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "out", 3)
    rows = [
        Row(
            key=None if i % 5 == 0 else f"k{i}",
            value=f"v{i}".encode(),
            partition=i % 3,
            headers=[Row(key="n", value=str(i).encode())] if i % 2 else [],
        )
        for i in range(3000)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, headers array<struct<key:string,value:binary>>",
    )
    df.write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", "out"
    ).mode("append").save()

    back = read_topic(spark, bootstrap, "out").collect()
    assert len(back) == 3000
    got = sorted(
        (
            (
                None if r.key is None else bytes(r.key).decode(),
                bytes(r.value),
                r.partition,
                [(h.key, bytes(h.value)) for h in r.headers or []],
            )
            for r in back
        ),
        key=lambda t: t[1],
    )
    want = sorted(
        ((r.key, r.value, r.partition, [(h.key, h.value) for h in r.headers]) for r in rows),
        key=lambda t: t[1],
    )
    assert got == want


def test_streaming_write_with_topic_column(spark, kafkalite_broker, tmp_path) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "src", 2)
    create_topic(bootstrap, "dst", 2)
    spark.createDataFrame(
        [(f"k{i}", f"v{i}") for i in range(400)], "key string, value string"
    ).write.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", "src"
    ).mode("append").save()

    query = (
        spark.readStream.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "src")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("'dst' AS topic", "key", "upper(CAST(value AS STRING)) AS value")
        .writeStream.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    back = read_topic(spark, bootstrap, "dst").collect()
    assert sorted((bytes(r.key), bytes(r.value)) for r in back) == sorted(
        (f"k{i}".encode(), f"V{i}".encode()) for i in range(400)
    )


def test_sink_without_value_column_is_refused(spark, kafkalite_broker) -> None:
    df = spark.createDataFrame([("k",)], "key string")
    with pytest.raises(Exception, match="'value' column"):
        df.write.format("kafkalite").option(
            "kafka.bootstrap.servers", kafkalite_broker.bootstrap_servers
        ).option("topic", "x").mode("append").save()
