"""Rows/s of kafkalite's Spark source against Spark's own Kafka connector
(spark-sql-kafka-0-10, fetched from Maven Central at run time), reading the same topic from
the same kafkalite broker in the same local SparkSession.

Each run reads the whole topic into Spark's `noop` sink, which materializes every row and
column; the first run of each source warms up (JIT, Python workers) and is not counted, and
the sources alternate run by run. The ratio is the median of the per-round ratios (each
round reads with both sources back to back, so machine load hits both alike) with its
spread, min to max. Progress goes to stderr; last comes one JSON line
(`read_ratio_vs_spark_kafka`, ...), and a plot of every run is written to --out.

    python bench/spark_source.py --quick          # 200,000 records, 3 rounds: ~2 minutes
    python bench/spark_source.py                  # 2,000,000 records, 5 rounds
    python bench/spark_source.py --bootstrap-servers host:9092 --topic existing-topic
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _spark import plot_rows_per_sec, ratios, start_spark
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def say(message: str) -> None:
    print(f"spark_source: {message}", file=sys.stderr, flush=True)


def produce(bootstrap: str, topic: str, partitions: int, records: int, value_bytes: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    value = b"x" * value_bytes
    step = max(records // 10, 1)
    for i in range(records):
        if i and i % step == 0:
            say(f"produced {i:,} of {records:,} records")
        while True:
            try:
                producer.produce(topic, value=value, key=b"key-%d" % (i % 10_000))
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120):
        raise SystemExit("producer did not deliver every record")


def floor_source(records: int, partitions: int, value_bytes: int) -> type:
    """A Python data source yielding prebuilt Arrow batches shaped like the topic's rows:
    what Spark's Python Data Source API costs with no Kafka and no decoding at all, the
    ceiling any Python source (kafkalite's included) can reach on this machine."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from kafkalite.spark.arrow import arrow_schema
    from kafkalite.spark.source import BASE_SCHEMA

    per_partition = records // partitions

    class Reader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(partitions)]

        def read(self, partition: InputPartition) -> Any:
            rows = 100_000
            batch = pa.RecordBatch.from_arrays(
                [
                    pa.repeat(pa.scalar(b"key-12345", pa.binary()), rows),
                    pa.repeat(pa.scalar(b"x" * value_bytes, pa.binary()), rows),
                    pa.repeat(pa.scalar("topic"), rows),
                    pa.repeat(pa.scalar(partition.value, pa.int32()), rows),
                    pa.repeat(pa.scalar(0, pa.int64()), rows),
                    pa.repeat(pa.scalar(0, pa.timestamp("us", tz="UTC")), rows),
                    pa.repeat(pa.scalar(0, pa.int32()), rows),
                ],
                schema=arrow_schema(False),
            )
            for start in range(0, per_partition, rows):
                yield batch.slice(0, min(rows, per_partition - start))

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow_floor"

        def schema(self) -> str:
            return BASE_SCHEMA

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader()

    return Floor


def read_once(spark: Any, fmt: str, bootstrap: str, topic: str) -> float:
    """Seconds to read the whole topic into the noop sink (planning included, as a user
    pays it)."""
    df = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def time_reads(
    spark: Any, formats: dict[str, str], bootstrap: str, topic: str, runs: int
) -> dict[str, list[float]]:
    """Each source `runs` times after one warm-up, alternating, so a noisy neighbour on the
    machine slows both sides alike rather than one whole series."""
    for fmt in formats.values():
        read_once(spark, fmt, bootstrap, topic)  # warm-up: JIT, Python workers
    seconds: dict[str, list[float]] = {name: [] for name in formats}
    for run in range(runs):
        for name, fmt in formats.items():
            seconds[name].append(read_once(spark, fmt, bootstrap, topic))
        say(
            f"round {run + 1}/{runs}: "
            + ", ".join(f"{name} {s[-1]:.2f} s" for name, s in seconds.items())
        )
    return seconds


LABELS = {
    "kafkalite": "kafkalite source",
    "spark_kafka": "Spark's Kafka connector",
    "python_source_floor": "Python source floor",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers", help="an existing broker (default: embedded)")
    ap.add_argument("--topic", default=None, help="read this existing topic, produce nothing")
    ap.add_argument(
        "--records", type=int, default=None, help="records to produce (default 2,000,000)"
    )
    ap.add_argument("--partitions", type=int, default=4, help="partitions of the topic")
    ap.add_argument("--value-bytes", type=int, default=100, help="bytes per record value")
    ap.add_argument("--runs", type=int, default=None, help="timed rounds (default 5)")
    ap.add_argument("--master", default="local[2]", help="Spark master")
    ap.add_argument(
        "--quick", action="store_true", help="200,000 records and 3 rounds (a couple of minutes)"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for the plot (default bench-results/spark-source-<time>)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also time a Python source yielding prebuilt Arrow batches (the API's ceiling)",
    )
    args = ap.parse_args()
    if args.records is None:
        args.records = 200_000 if args.quick else 2_000_000
    if args.runs is None:
        args.runs = 3 if args.quick else 5
    out = args.out or Path("bench-results") / f"spark-source-{time.strftime('%Y%m%dT%H%M%S')}"

    import pyspark

    from kafkalite import Broker

    spark, unavailable = start_spark("kafkalite-spark-bench", args.master, say)

    with tempfile.TemporaryDirectory() as data_dir:
        broker = None
        bootstrap = args.bootstrap_servers
        if bootstrap is None:
            broker = Broker(log_dirs=data_dir).start()
            bootstrap = broker.bootstrap_servers
        topic = args.topic or f"spark-bench-{int(time.time())}"
        try:
            if args.topic is None:
                say(f"producing {args.records:,} records of {args.value_bytes} bytes to {topic}")
                produce(bootstrap, topic, args.partitions, args.records, args.value_bytes)
            records = (
                spark.read.format("kafkalite")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic)
                .load()
                .count()
            )
            result: dict[str, Any] = {
                "bench": "spark_source",
                "spark_version": pyspark.__version__,
                "master": args.master,
                "records": records,
                "partitions": args.partitions if args.topic is None else None,
                "value_bytes": args.value_bytes if args.topic is None else None,
                "runs": args.runs,
            }
            formats = {"kafkalite": "kafkalite"}
            if args.floor:
                spark.dataSource.register(floor_source(records, args.partitions, args.value_bytes))
                formats["python_source_floor"] = "arrow_floor"
            if unavailable is None:
                formats["spark_kafka"] = "kafka"
            else:
                result["spark_kafka_unavailable"] = unavailable
            say(f"reading {records:,} records: a warm-up, then {args.runs} rounds")
            timed = time_reads(spark, formats, bootstrap, topic, args.runs)
            for name, seconds in timed.items():
                median = statistics.median(seconds)
                result[f"{name}_seconds"] = [round(s, 3) for s in seconds]
                result[f"{name}_rows_per_sec"] = round(records / median)
                # The best run is the one least disturbed by other work on the machine.
                result[f"{name}_rows_per_sec_best"] = round(records / min(seconds))
                print(
                    f"{name}: {records} records, {records / median:,.0f} records/sec "
                    f"(median of {args.runs} runs, {median:.2f} s)",
                    file=sys.stderr,
                )
            if "spark_kafka" in timed:
                result.update(ratios("read", timed["kafkalite"], timed["spark_kafka"]))
            png = out / "spark_source.png"
            if plot_rows_per_sec(result, list(timed), LABELS, "read", records, png, say):
                result["plot"] = str(png)
                say(f"plot: {png}")
            print(json.dumps(result))
        finally:
            spark.stop()
            if broker is not None:
                broker.stop()


if __name__ == "__main__":
    main()
