"""The Python sink: a DataFrame written to a topic reads back the same, in batch and
streaming. Batch writes name it `kafkalite-python`: with the JVM writer built,
format("kafkalite") batch writes go to that one (tests/spark/test_jvm_write.py)."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from kafkalite.spark.jvm_sink import PYTHON_FORMAT as PYTHON_WRITER
from tests.spark.helpers import create_topic, raw_batches


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
    df.write.format(PYTHON_WRITER).option("kafka.bootstrap.servers", bootstrap).option(
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


def test_batches_keep_to_batch_size_with_consecutive_sequences(spark, kafkalite_broker) -> None:
    """Many batches per partition per Arrow batch, sent a round at a time from the task's
    sending thread: each within batch.size, each producer's sequences gapless (the broker
    refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER), every row written once."""
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "small-batches", 2)
    rows = 30_000
    df = spark.range(rows, numPartitions=2).selectExpr(
        "CAST(id % 100 AS STRING) AS key", "CONCAT('value-', CAST(id AS STRING)) AS value"
    )
    df.write.format(PYTHON_WRITER).option("kafka.bootstrap.servers", bootstrap).option(
        "topic", "small-batches"
    ).option("kafka.batch.size", "4096").mode("append").save()

    producers: set[int] = set()
    for partition in (0, 1):
        batches = raw_batches(bootstrap, "small-batches", partition)
        assert len(batches) > 50
        assert max(size for size, _, _, _ in batches) <= 4096
        next_sequence: dict[int, int] = {}
        for _, producer, sequence, count in batches:
            assert producer >= 0, "idempotent batches carry their producer id"
            assert sequence == next_sequence.get(producer, 0)
            next_sequence[producer] = sequence + count
        producers |= next_sequence.keys()
    assert len(producers) == 2, "one idempotent producer per task"
    back = read_topic(spark, bootstrap, "small-batches").selectExpr("CAST(value AS STRING) v")
    values = [r.v for r in back.collect()]
    assert len(values) == rows and set(values) == {f"value-{i}" for i in range(rows)}


def test_a_refused_batch_fails_the_write_with_the_brokers_code(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "tiny-messages", 1, {"max.message.bytes": "2000"})
    df = spark.createDataFrame([("v" * 100,)] * 200, "value string")
    with pytest.raises(Exception, match="error code 10"):  # MESSAGE_TOO_LARGE
        df.write.format(PYTHON_WRITER).option("kafka.bootstrap.servers", bootstrap).option(
            "topic", "tiny-messages"
        ).mode("append").save()


def test_register_turns_off_sparks_per_row_arrow_size_check_unless_set(spark) -> None:
    from kafkalite.spark import ARROW_BATCH_BYTES_KEY, register

    assert spark.conf.get(ARROW_BATCH_BYTES_KEY) == str(2**31 - 1)
    spark.conf.set(ARROW_BATCH_BYTES_KEY, "64m")
    try:
        register(spark)
        assert spark.conf.get(ARROW_BATCH_BYTES_KEY) == "64m"
    finally:
        spark.conf.set(ARROW_BATCH_BYTES_KEY, str(2**31 - 1))


def test_sink_without_value_column_is_refused(spark, kafkalite_broker) -> None:
    df = spark.createDataFrame([("k",)], "key string")
    with pytest.raises(Exception, match="'value' column"):
        df.write.format(PYTHON_WRITER).option(
            "kafka.bootstrap.servers", kafkalite_broker.bootstrap_servers
        ).option("topic", "x").mode("append").save()


def test_keyed_rows_land_where_kafka_clients_put_them(kafkalite_broker) -> None:
    """The sink's partitioner is Kafka's default (murmur2), as librdkafka's murmur2_random."""
    import pyarrow as pa
    from confluent_kafka import Producer

    from kafkalite import _core
    from kafkalite.spark.writer import _binary_column

    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "keyed", 5)
    keys = [f"user-{i}".encode() for i in range(200)]
    want: dict[bytes, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(
            "keyed",
            key=key,
            value=b"x",
            on_delivery=lambda _e, m: want.update({m.key(): m.partition()}),
        )
    assert producer.flush(30) == 0
    encoded = _core.encode_arrow_batches(
        _binary_column(pa.array([b"x"] * len(keys))),
        5,
        keys=_binary_column(pa.array(keys)),
        batch_bytes=1,
    )
    got = {
        rec[2]: partition for partition, data, _ in encoded for rec in _core.decode_batches(data)
    }
    assert got == want
    assert len(set(want.values())) == 5


def test_the_encoder_refuses_columns_it_cannot_trust() -> None:
    import numpy as np
    import pyarrow as pa

    from kafkalite import _core
    from kafkalite.spark.writer import _binary_column

    values = _binary_column(pa.array([b"a", b"bb"]))
    with pytest.raises(ValueError, match="partition 5 does not exist"):
        _core.encode_arrow_batches(values, 2, partitions=np.array([0, 5], dtype=np.int32))
    validity, offsets, data, offset, _ = values
    with pytest.raises(ValueError, match="offsets buffer is shorter"):
        _core.encode_arrow_batches((validity, offsets, data, offset, 10), 1)
    with pytest.raises(ValueError, match="within the data buffer"):
        _core.encode_arrow_batches((validity, offsets, b"", offset, 2), 1)
    with pytest.raises(ValueError, match="num_partitions"):
        _core.encode_arrow_batches(values, 0)
    keys = _binary_column(pa.array([b"k"]))
    with pytest.raises(ValueError, match="differ in length"):
        _core.encode_arrow_batches(values, 1, keys=keys)
