"""The JVM writer: rows go from Spark's JVM to the Rust producer over JNI. With its jar on
the session (register() puts it there), format("kafkalite") batch writes are its; the
tests write through that name, and through `kafkalite-jvm` (the writer alone), to a real
broker and read back what they wrote."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import Row

from kafkalite.spark import jvm_sink
from tests.spark.helpers import create_topic, raw_batches

FORMAT = "kafkalite"


@pytest.fixture(scope="module", autouse=True)
def jvm_writer_built() -> None:
    # scripts/test.sh builds it; a run without it must say so, not pass without testing.
    if not jvm_sink.built():
        pytest.fail(f"the JVM writer is not built ({jvm_sink.JAR}): run scripts/build-spark-jvm.sh")


def write(df, bootstrap: str, options: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    writer = df.write.format(FORMAT).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def read_back(spark, bootstrap: str, topic: str) -> list:  # type: ignore[no-untyped-def]
    return (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .collect()
    )


def test_every_row_is_written_once_with_its_key_value_partition_and_headers(
    spark, kafkalite_broker
) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-out", 3)
    rows = [
        Row(
            key=None if i % 5 == 0 else f"k{i}",
            # Tombstones only on keyed rows, so every row differs from every other.
            value=None if i % 97 == 1 and i % 5 else f"v{i}".encode(),
            partition=None if i % 7 == 0 else i % 3,
            headers=[Row(key="n", value=str(i).encode()), Row(key="z", value=None)]
            if i % 2
            else [],
        )
        for i in range(3000)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, headers array<struct<key:string,value:binary>>",
    ).repartition(3)
    write(df, bootstrap, {"topic": "jvm-out"})

    back = read_back(spark, bootstrap, "jvm-out")
    assert len(back) == 3000

    def as_tuple(key, value, headers):  # type: ignore[no-untyped-def]
        return (
            key if key is None or isinstance(key, str) else bytes(key).decode(),
            None if value is None else bytes(value),
            tuple((h.key, None if h.value is None else bytes(h.value)) for h in headers or []),
        )

    got = sorted(((as_tuple(r.key, r.value, r.headers), r.partition) for r in back), key=repr)
    want_rows = {as_tuple(r.key, r.value, r.headers): r.partition for r in rows}
    assert len(want_rows) == len(rows)
    assert sorted(want_rows, key=repr) == [g[0] for g in got]
    for record, partition in got:
        if want_rows[record] is not None:
            assert partition == want_rows[record], record


def test_a_topic_column_and_string_values_go_to_each_rows_topic(spark, kafkalite_broker) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-a", 2)
    create_topic(bootstrap, "jvm-b", 2)
    df = spark.createDataFrame(
        [("jvm-a" if i % 3 else "jvm-b", f"k{i}", f"v{i}") for i in range(900)],
        "topic string, key string, value string",
    )
    write(df, bootstrap, {})
    for topic, wanted in (("jvm-a", [i for i in range(900) if i % 3]), ("jvm-b", range(0, 900, 3))):
        back = read_back(spark, bootstrap, topic)
        assert sorted(bytes(r.value).decode() for r in back) == sorted(f"v{i}" for i in wanted)


def test_keyed_rows_land_where_kafka_clients_put_them_and_keyless_rows_spread(
    spark, kafkalite_broker
) -> None:
    """Kafka's default partitioner: murmur2 of the key (as librdkafka's murmur2_random and
    the Java producer), sticky for keyless rows (one partition per batch, moving on)."""
    from confluent_kafka import Producer

    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-keyed", 5)
    create_topic(bootstrap, "jvm-keyed-probe", 5)
    keys = [f"user-{i}" for i in range(300)]
    want: dict[bytes, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(
            "jvm-keyed-probe",
            key=key.encode(),
            value=b"x",
            on_delivery=lambda _e, m: want.update({m.key(): m.partition()}),
        )
    assert producer.flush(30) == 0
    write(
        spark.createDataFrame([(k, "x") for k in keys], "key string, value string"),
        bootstrap,
        {"topic": "jvm-keyed"},
    )
    got = {bytes(r.key): r.partition for r in read_back(spark, bootstrap, "jvm-keyed")}
    assert got == want and len(set(got.values())) == 5

    create_topic(bootstrap, "jvm-keyless", 4)
    df = spark.range(4000, numPartitions=4).selectExpr("CAST(id AS STRING) AS value")
    write(df, bootstrap, {"topic": "jvm-keyless", "kafka.batch.size": "8192"})
    back = read_back(spark, bootstrap, "jvm-keyless")
    assert sorted(int(bytes(r.value)) for r in back) == list(range(4000))
    assert {r.partition for r in back} == {0, 1, 2, 3}


def test_batches_keep_to_batch_size_with_gapless_sequences_per_producer(
    spark, kafkalite_broker
) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-small-batches", 2)
    rows = 30_000
    df = spark.range(rows, numPartitions=3).selectExpr(
        "CAST(id % 100 AS STRING) AS key", "CONCAT('value-', CAST(id AS STRING)) AS value"
    )
    write(df, bootstrap, {"topic": "jvm-small-batches", "kafka.batch.size": "4096"})

    producers: set[int] = set()
    for partition in (0, 1):
        batches = raw_batches(bootstrap, "jvm-small-batches", partition)
        assert len(batches) > 50
        assert max(size for size, _, _, _ in batches) <= 4096
        next_sequence: dict[int, int] = {}
        for _, producer, sequence, count in batches:
            assert producer >= 0, "idempotent batches carry their producer id"
            assert sequence == next_sequence.get(producer, 0), (producer, sequence)
            next_sequence[producer] = sequence + count
        producers |= next_sequence.keys()
    assert len(producers) == 3, "one idempotent producer per task"
    back = read_back(spark, bootstrap, "jvm-small-batches")
    values = [bytes(r.value).decode() for r in back]
    assert len(values) == rows and set(values) == {f"value-{i}" for i in range(rows)}


def test_rows_over_many_chunks_and_a_row_bigger_than_a_chunk_are_each_written_once(
    spark, kafkalite_broker
) -> None:
    """A task hands its rows over 4 MiB at a time; a row bigger than that grows the buffer."""
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-chunks", 2, {"max.message.bytes": str(8 << 20)})
    df = spark.range(100_000, numPartitions=2).selectExpr(
        "CAST(id AS STRING) AS key",
        "CAST(CONCAT(repeat('x', 90), CAST(id AS STRING)) AS BINARY) AS value",
    )
    big = spark.createDataFrame([("big", b"y" * (5 << 20))], "key string, value binary")
    write(df.unionByName(big), bootstrap, {"topic": "jvm-chunks"})
    back = (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "jvm-chunks")
        .load()
        .selectExpr("CAST(key AS STRING) AS k", "length(value) AS n")
        .collect()
    )
    assert len(back) == 100_001
    assert sorted(r.k for r in back if r.k != "big") == sorted(str(i) for i in range(100_000))
    assert [r.n for r in back if r.k == "big"] == [5 << 20]


def test_a_refused_batch_fails_the_write_with_the_brokers_code_and_name(
    spark, kafkalite_broker
) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-tiny-messages", 1, {"max.message.bytes": "2000"})
    df = spark.createDataFrame([("v" * 100,)] * 200, "value string")
    with pytest.raises(Exception, match=r"error code 10 \(MESSAGE_TOO_LARGE\)"):
        write(df, bootstrap, {"topic": "jvm-tiny-messages"})


@pytest.mark.parametrize(
    ("schema", "row", "options", "error"),
    [
        ("key string", ("k",), {}, "needs a 'value' column"),
        (
            "value string",
            ("v",),
            {"kafka.acks": "2"},
            "kafka.acks: must be all, -1, 0 or 1, got '2'",
        ),
        (
            "value string",
            ("v",),
            {"kafka.compression.type": "brotli"},
            "kafka.compression.type: expected none, gzip, snappy, lz4 or zstd, got 'brotli'",
        ),
        (
            "value string",
            ("v",),
            {"kafka.batch.size": "-4"},
            "kafka.batch.size: expected a positive integer, got '-4'",
        ),
        ("value string, partition int", ("v", 7), {}, "partition 7 does not exist"),
        ("value string, partition int", ("v", -3), {}, "partition -3 does not exist"),
        ("value string, key int", ("v", 1), {}, "column 'key' must be string or binary, got int"),
    ],
)
def test_bad_options_and_columns_fail_naming_the_value(
    spark, kafkalite_broker, schema, row, options, error
) -> None:
    bootstrap = kafkalite_broker.bootstrap_servers
    topic = "jvm-refusals"
    create_topic(bootstrap, topic, 2)
    df = spark.createDataFrame([row], schema)
    with pytest.raises(Exception, match=re.escape(error)):
        write(df, bootstrap, {"topic": topic, **options})
    assert read_back(spark, bootstrap, topic) == [], "a refused write wrote nothing"


def test_register_puts_the_jvm_writer_on_the_session(spark) -> None:
    assert spark.conf.get(jvm_sink.LIBRARY_CONF) == str(jvm_sink.LIBRARY)


def test_kafkalite_routes_batch_writes_to_the_jvm_and_the_rest_to_python(
    spark, kafkalite_broker
) -> None:
    """The same bad row through the three names: the JVM writer and the Python one word
    the refusal differently, so each message shows which writer ran."""
    bootstrap = kafkalite_broker.bootstrap_servers
    create_topic(bootstrap, "jvm-routing", 2)
    bad = spark.createDataFrame([("v", -3)], "value string, partition int")
    jvm, python = ": partitions are numbered from 0", " (the topic has 2)"
    for fmt, wording in (
        ("kafkalite", jvm),
        (jvm_sink.FORMAT, jvm),
        (jvm_sink.PYTHON_FORMAT, python),
    ):
        with pytest.raises(Exception, match=re.escape(f"partition -3 does not exist{wording}")):
            bad.write.format(fmt).option("kafka.bootstrap.servers", bootstrap).option(
                "topic", "jvm-routing"
            ).mode("append").save()
    good = spark.createDataFrame([(f"v{i}",) for i in range(50)], "value string")
    write(good, bootstrap, {"topic": "jvm-routing"})
    good.write.format(jvm_sink.FORMAT).option("kafka.bootstrap.servers", bootstrap).option(
        "topic", "jvm-routing"
    ).mode("append").save()
    # Reads through format("kafkalite") are the Python source's, handed over by the jar.
    values = sorted(bytes(r.value).decode() for r in read_back(spark, bootstrap, "jvm-routing"))
    assert values == sorted([f"v{i}" for i in range(50)] * 2)
