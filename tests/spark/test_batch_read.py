"""Batch reads through format("kafkalite") against a real broker."""

from __future__ import annotations

import json
import time

import pytest
from pyspark.sql import SparkSession

from tests.spark.helpers import create_topic, produce


def reader(spark: SparkSession, bootstrap: str, **options: str):  # type: ignore[no-untyped-def]
    r = spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def rows_by_position(df) -> dict:  # type: ignore[no-untyped-def]
    table = df.toArrow()
    return {
        (p, o): (k, v)
        for k, v, p, o in zip(
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("partition").to_pylist(),
            table.column("offset").to_pylist(),
            strict=True,
        )
    }


def test_100k_records_over_4_partitions_read_back_exactly(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "events", 4)
    # Null keys, empty values and a compressed half exercise the decoder's edges.
    rows = [
        (
            None if i % 11 == 0 else b"key-%d" % i,
            b"" if i % 13 == 0 else b"value-%d" % i,
            i % 4,
            None,
        )
        for i in range(100_000)
    ]
    produced = produce(bootstrap, "events", rows[:50_000]).records
    produced |= produce(bootstrap, "events", rows[50_000:], compression="zstd").records

    df = reader(spark, bootstrap, subscribe="events")
    assert df.rdd.getNumPartitions() == 4
    got = rows_by_position(df)
    assert len(got) == 100_000
    assert got == {pos: (k, v) for pos, (k, v, _h) in produced.items()}
    topics = {r.topic for r in df.select("topic").distinct().collect()}
    assert topics == {"events"}

    # minPartitions splits the big partitions into offset ranges; the rows stay the same.
    split = reader(spark, bootstrap, subscribe="events", minPartitions="10")
    assert split.rdd.getNumPartitions() >= 10
    assert split.count() == 100_000
    assert split.select("partition", "offset").distinct().count() == 100_000


def test_offsets_json_and_assign(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "t", 2)
    produce(bootstrap, "t", [(None, b"%d" % i, i % 2, None) for i in range(200)])

    df = reader(
        spark,
        bootstrap,
        subscribe="t",
        startingOffsets=json.dumps({"t": {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({"t": {"0": 20, "1": -1}}),
    )
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(100)]

    only_one = reader(
        spark,
        bootstrap,
        assign=json.dumps({"t": [1]}),
        startingOffsets=json.dumps({"t": {"1": 95}}),
    )
    assert sorted(r.offset for r in only_one.collect()) == [95, 96, 97, 98, 99]
    assert {r.partition for r in only_one.collect()} == {1}

    pattern = reader(spark, bootstrap, subscribePattern="t|nothing-.*")
    assert pattern.count() == 200


def test_starting_offsets_by_timestamp(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "ts", 1)
    base = int(time.time() * 1000) - 60_000
    produce(bootstrap, "ts", [(None, b"old", 0, None)] * 5, timestamp_ms=base)
    produce(bootstrap, "ts", [(None, b"new", 0, None)] * 3, timestamp_ms=base + 10_000)

    df = reader(
        spark,
        bootstrap,
        subscribe="ts",
        startingOffsetsByTimestamp=json.dumps({"ts": {"0": base + 5_000}}),
    )
    rows = df.collect()
    assert sorted(r.offset for r in rows) == [5, 6, 7]
    assert {bytes(r.value) for r in rows} == {b"new"}
    assert {r.timestamp.timestamp() * 1000 for r in rows} == {base + 10_000}
    assert {r.timestampType for r in rows} == {0}


def _bytes(value: bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)


def test_headers(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "h", 1)
    headers = [
        [("trace", b"abc"), ("empty", None)],
        None,
        [("a", b"1"), ("b", b"2"), ("a", b"3")],
    ]
    produce(bootstrap, "h", [(b"k", b"v", 0, h) for h in headers])

    df = reader(spark, bootstrap, subscribe="h", includeHeaders="true")
    assert df.columns[-1] == "headers"
    got = [
        None if r.headers is None else [(h.key, _bytes(h.value)) for h in r.headers]
        for r in df.orderBy("offset").collect()
    ]
    # No headers is a null list, as in Spark's Kafka source.
    assert got == headers
    assert "headers" not in reader(spark, bootstrap, subscribe="h").columns


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "no-such-topic"}, "subscribe: unknown topic.*no-such-topic"),
        ({"subscribe": "h", "startingOffsets": '{"h": {"0": 1'}, "startingOffsets: malformed JSON"),
        ({"subscribe": "h", "endingOffsets": '["h"]'}, "endingOffsets: expected a JSON object"),
        ({"subscribe": "h", "startingOffsets": '{"h": {"7": 0}}'}, r"startingOffsets: .*h\[7\]"),
        ({"assign": '{"h": [0, 9]}'}, r"assign: unknown partition.*'h', 9"),
        ({"subscribe": "h", "minPartitions": "zero"}, "minPartitions: .*'zero'"),
        ({}, "exactly one of subscribe, subscribePattern, assign"),
    ],
)
def test_bad_options_name_the_option(spark, kafkalite_broker, options, message) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "h", 1)
    with pytest.raises(Exception, match=message):
        reader(spark, bootstrap, **options).collect()
