"""The kafkalite source under ``kafka.isolation.level=read_committed``: offset ranges end
at the last stable offset (never inside an open transaction), and records of aborted
transactions and transaction markers never reach the DataFrame; read_uncommitted (the
default) reads everything up to the high watermark."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from kafkalite.spark.options import parse_source_options
from tests.spark.helpers import create_topic


def read_values(spark: SparkSession, bootstrap: str, **options: str) -> list[bytes]:
    r = (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "txn")
    )
    for key, value in options.items():
        r = r.option(key, value)
    table = r.load().toArrow()
    return sorted(table.column("value").to_pylist())


def test_read_committed_stops_at_the_lso_and_skips_aborted(spark, kafkalite_broker) -> None:
    bs = kafkalite_broker.bootstrap_servers
    create_topic(bs, "txn", 2)
    p = Producer({"bootstrap.servers": bs, "transactional.id": "spark-txn"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn", value=b"c-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn", value=b"a-%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("txn", value=b"c2", partition=0)
    p.commit_transaction(30)
    # An open transaction: its records are past the last stable offset.
    p.begin_transaction()
    for i in range(4):
        p.produce("txn", value=b"open-%d" % i, partition=i % 2)
    p.flush(30)

    committed = sorted([b"c-%d" % i for i in range(10)] + [b"c2"])
    assert read_values(spark, bs, **{"kafka.isolation.level": "read_committed"}) == committed
    assert read_values(spark, bs, **{"isolation.level": "read_committed"}) == committed
    everything = committed + [b"a-%d" % i for i in range(10)] + [b"open-%d" % i for i in range(4)]
    assert read_values(spark, bs) == sorted(everything)

    # Once the open transaction commits, committed readers see it too.
    p.commit_transaction(30)
    assert read_values(spark, bs, **{"kafka.isolation.level": "read_committed"}) == sorted(
        committed + [b"open-%d" % i for i in range(4)]
    )


def test_isolation_level_option_is_checked() -> None:
    base = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "t"}
    assert parse_source_options(base, False).isolation_level == 0
    opts = {**base, "kafka.isolation.level": "READ_COMMITTED"}
    assert parse_source_options(opts, False).isolation_level == 1
    with pytest.raises(ValueError, match=r"kafka\.isolation\.level: .*'serializable'"):
        parse_source_options({**base, "kafka.isolation.level": "serializable"}, False)
