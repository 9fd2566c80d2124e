"""Rows/s of kafkalite's Spark sink against Spark's own Kafka sink (spark-sql-kafka-0-10,
fetched from Maven Central at run time), writing the same cached DataFrame to the same
kafkalite broker in the same local SparkSession.

Like with like: both sinks get the same producer settings (`SAME_PRODUCER`: acks=all,
idempotence on, no compression, batch.size 1 MiB, which is kafkalite's default, and
linger.ms 5, Kafka 4's default, so Java's producer fills its batches too). Spark's sink is
also timed as it ships (`spark_kafka_defaults`: its kafka-clients' defaults, batch.size
16 KiB and linger.ms 0 for kafka-clients 3.x, with acks=all). The first write of each sink
warms up (JIT, Python workers) and is not counted; then the sinks alternate round by
round, so machine load hits all alike. Each ratio is the median of the per-round ratios,
with its spread; every write is checked by the records it added to the topic. Progress
goes to stderr; last comes one JSON line (`write_ratio_vs_spark_kafka`, like with like;
`write_ratio_vs_spark_kafka_defaults`; `<sink>_cpu_seconds`, the median CPU seconds per
write of the Spark JVM, its Python workers and this process, which runs the broker), and a
plot of every run is written to --out.

    python bench/spark_sink.py --quick          # 500,000 rows, 3 rounds: a few minutes
    python bench/spark_sink.py                  # 2,000,000 rows, 5 rounds
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

from _spark import plot_rows_per_sec, process_cpu_seconds, ratios, start_spark
from confluent_kafka.admin import AdminClient, NewTopic


def say(message: str) -> None:
    print(f"spark_sink: {message}", file=sys.stderr, flush=True)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    from kafkalite import _core

    with _core.KafkaClient(bootstrap) as client:
        ends = client.list_offsets({(topic, p): -1 for p in range(partitions)})
    return sum(ends.values())


def floor_sink() -> type:
    """A Python Arrow sink that only counts the rows it is handed: what Spark's Python Data
    Source API costs with no Kafka at all, the ceiling any Python sink (kafkalite's
    included) can reach on this machine."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class Counting(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for batch in iterator:
                batch.num_rows  # noqa: B018 - touching the batch is the point
            return WriterCommitMessage()

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow_floor_sink"

        def writer(self, schema: Any, overwrite: bool) -> Counting:
            return Counting()

    return Floor


LABELS = {
    "kafkalite": "kafkalite sink\n(JVM writer)",
    "kafkalite_python": "kafkalite sink\n(Python writer)",
    "spark_kafka": "Spark's Kafka sink\n(same producer settings)",
    "spark_kafka_defaults": "Spark's Kafka sink\n(its defaults)",
    "python_sink_floor": "Python sink floor",
}

#: The producer settings both sinks get in the like-with-like comparison.
SAME_PRODUCER = {
    "kafka.acks": "all",
    "kafka.enable.idempotence": "true",
    "kafka.compression.type": "none",
    "kafka.batch.size": str(1 << 20),
    "kafka.linger.ms": "5",
}


def write_once(df: Any, fmt: str, options: dict[str, str], bootstrap: str, topic: str) -> float:
    start = time.perf_counter()
    writer = df.write.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.option("topic", topic).mode("append").save()
    return time.perf_counter() - start


def kafka_clients_version(jars: list[Path]) -> str | None:
    """The kafka-clients version Spark's connector runs, from its jar's name."""
    for jar in jars:
        if jar.name.startswith("kafka-clients-"):
            return jar.name.removeprefix("kafka-clients-").removesuffix(".jar")
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="rows per write (default 2,000,000)")
    ap.add_argument("--partitions", type=int, default=4, help="partitions of the topic")
    ap.add_argument("--value-bytes", type=int, default=100, help="bytes per record value")
    ap.add_argument("--runs", type=int, default=None, help="timed rounds (default 5)")
    ap.add_argument("--master", default="local[2]", help="Spark master")
    ap.add_argument("--quick", action="store_true", help="500,000 rows and 3 rounds")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for the plot (default bench-results/spark-sink-<time>)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also time a Python sink that writes nothing (the API's ceiling)",
    )
    args = ap.parse_args()
    rows = args.rows or (500_000 if args.quick else 2_000_000)
    runs = args.runs or (3 if args.quick else 5)

    import pyspark

    from kafkalite import Broker

    spark, unavailable = start_spark("kafkalite-spark-sink-bench", args.master, say)
    from kafkalite.spark import jvm_sink

    # `kafkalite` is format("kafkalite"): the JVM writer when scripts/build-spark-jvm.sh
    # has built it, the Python writer otherwise; with both, the Python writer is timed as
    # `kafkalite_python`.
    formats: dict[str, tuple[str, dict[str, str]]] = {}
    if jvm_sink.built():
        formats["kafkalite"] = ("kafkalite", SAME_PRODUCER)
        formats["kafkalite_python"] = (jvm_sink.PYTHON_FORMAT, SAME_PRODUCER)
    else:
        say("the JVM writer is not built (scripts/build-spark-jvm.sh): timing the Python one")
        formats["kafkalite"] = ("kafkalite", SAME_PRODUCER)
    if unavailable is None:
        formats["spark_kafka"] = ("kafka", SAME_PRODUCER)
        formats["spark_kafka_defaults"] = ("kafka", {"kafka.acks": "all"})
    if args.floor:
        spark.dataSource.register(floor_sink())
        formats["python_sink_floor"] = ("arrow_floor_sink", {})

    with tempfile.TemporaryDirectory() as data_dir, Broker(log_dirs=data_dir) as broker:
        bootstrap = broker.bootstrap_servers
        topic = "spark-sink-bench"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        df = (
            spark.range(rows, numPartitions=args.partitions)
            .selectExpr(
                "CAST(id % 10000 AS STRING) AS key",
                f"CAST(repeat('x', {args.value_bytes}) AS BINARY) AS value",
            )
            .cache()
        )
        df.count()
        say(f"writing {rows:,} rows of {args.value_bytes} bytes: a warm-up, then {runs} rounds")
        seconds: dict[str, list[float]] = {name: [] for name in formats}
        cpu: dict[str, list[dict[str, float]]] = {name: [] for name in formats}
        for run in range(runs + 1):
            for name, (fmt, options) in formats.items():
                before = end_offsets(bootstrap, topic, args.partitions)
                cpu_before = process_cpu_seconds()
                took = write_once(df, fmt, options, bootstrap, topic)
                cpu_after = process_cpu_seconds()
                added = end_offsets(bootstrap, topic, args.partitions) - before
                if name != "python_sink_floor" and added != rows:
                    raise SystemExit(f"{name} wrote {added} records, not {rows}")
                if run:
                    seconds[name].append(took)
                    if cpu_before and cpu_after:
                        cpu[name].append({k: cpu_after[k] - cpu_before[k] for k in cpu_after})
            if run:
                say(
                    f"round {run}/{runs}: "
                    + ", ".join(f"{n} {s[-1]:.2f} s" for n, s in seconds.items())
                )
        result: dict[str, Any] = {
            "bench": "spark_sink",
            "spark_version": pyspark.__version__,
            "master": args.master,
            "rows": rows,
            "partitions": args.partitions,
            "value_bytes": args.value_bytes,
            "runs": runs,
            "kafkalite_writer": "jvm" if "kafkalite_python" in formats else "python",
            "producer_settings": {k.removeprefix("kafka."): v for k, v in SAME_PRODUCER.items()},
            "arrow_max_bytes_per_batch": spark.conf.get(
                "spark.sql.execution.arrow.maxBytesPerBatch"
            ),
        }
        if unavailable is None:
            from kafkalite.spark.jvm_connector import connector_jars

            jars = connector_jars(pyspark.__version__)
            result["spark_kafka_clients_version"] = kafka_clients_version(jars)
        for name, s in seconds.items():
            result[f"{name}_seconds"] = [round(x, 3) for x in s]
            result[f"{name}_rows_per_sec"] = round(rows / statistics.median(s))
            if cpu[name]:
                # Where the time goes: median CPU seconds per write, by process.
                result[f"{name}_cpu_seconds"] = {
                    k: round(statistics.median(c[k] for c in cpu[name]), 2) for k in cpu[name][0]
                }
        if "spark_kafka" in seconds:
            result.update(ratios("write", seconds["kafkalite"], seconds["spark_kafka"]))
            result.update(
                ratios(
                    "write",
                    seconds["kafkalite"],
                    seconds["spark_kafka_defaults"],
                    against="spark_kafka_defaults",
                )
            )
        if "kafkalite_python" in seconds and "spark_kafka" in seconds:
            python = ratios("write", seconds["kafkalite_python"], seconds["spark_kafka"])
            result.update({f"python_writer_{k}": v for k, v in python.items()})
        if "python_sink_floor" in seconds:
            result["kafkalite_vs_floor"] = round(
                statistics.median(seconds["python_sink_floor"])
                / statistics.median(seconds["kafkalite"]),
                2,
            )
        if unavailable is not None:
            result["spark_kafka_unavailable"] = unavailable
        spark.stop()
        out = args.out or Path("bench-results") / f"spark-sink-{time.strftime('%Y%m%dT%H%M%S')}"
        png = out / "spark_sink.png"
        if plot_rows_per_sec(result, list(seconds), LABELS, "write", rows, png, say):
            result["plot"] = str(png)
            say(f"plot: {png}")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
