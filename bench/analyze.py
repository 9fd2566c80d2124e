"""Cross-run, cross-profile comparison of every benchmark results file, with PySpark.

    python bench/analyze.py                       # bench/results/**/results.jsonl
    python bench/analyze.py out1/results.jsonl out2/results.jsonl

Loads all JSON lines written by ``kafkalite bench run`` into one DataFrame (schemas are
merged across files), keeps the confluent-kafka produce and catch-up rows, and prints per
(workload, profile, system): runs, median produce and consume MiB/s, median publish and
end-to-end p99, the ratio to Kafka in the same workload and profile, and the fraction of the
same run's disk (fio buffered) and network (iperf3) limits.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def find_files(args: list[str]) -> list[str]:
    if args:
        paths = [Path(a) for a in args]
    else:
        paths = sorted((REPO / "bench" / "results").rglob("results.jsonl"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"analyze: no such results file: {', '.join(missing)}")
    if not paths:
        raise SystemExit(
            "analyze: no results.jsonl under bench/results; run `kafkalite bench run` first"
        )
    return [str(p) for p in paths]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="*", help="results.jsonl files (default: bench/results)")
    args = parser.parse_args()
    files = find_files(args.files)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkalite-bench-analyze")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = spark.read.json(files)
        median = lambda c: F.percentile_approx(c, 0.5, 10_000)  # noqa: E731

        limits = (
            rows.where(F.col("kind") == "limit")
            .groupBy("run_id")
            .agg(
                median(
                    F.when(
                        F.col("tool") == "fio", F.when(F.col("mode") == "buffered", F.col("mb_s"))
                    )
                ).alias("disk_mb_s"),
                median(
                    F.when(
                        F.col("tool") == "iperf3", F.when(F.col("mode") == "plain", F.col("mb_s"))
                    )
                ).alias("net_mb_s"),
            )
        )
        res = rows.where((F.col("kind") == "result") & (F.col("driver") == "confluent-kafka")).join(
            limits, "run_id", "left"
        )
        keys = ["workload", "profile", "system"]
        produce = (
            res.where(F.col("phase") == "produce")
            .groupBy(*keys)
            .agg(
                F.countDistinct("run_id", "run_index").alias("runs"),
                median("produce_mb_s").alias("produce_mb_s"),
                median(F.col("publish_latency.p99_ms")).alias("publish_p99_ms"),
                median(F.col("e2e_latency.p99_ms")).alias("e2e_p99_ms"),
                median(F.col("produce_mb_s") / F.col("disk_mb_s")).alias("of_disk"),
            )
        )
        consume = (
            res.where(F.col("phase") == "catch-up")
            .groupBy(*keys)
            .agg(
                median("consume_mb_s").alias("consume_mb_s"),
                median(F.col("consume_mb_s") / F.col("net_mb_s")).alias("of_net"),
            )
        )
        table = produce.join(consume, keys, "full_outer")
        kafka = table.where(F.col("system") == "kafka").select(
            "workload",
            "profile",
            F.col("produce_mb_s").alias("k_prod"),
            F.col("consume_mb_s").alias("k_cons"),
            F.col("publish_p99_ms").alias("k_p99"),
        )
        out = (
            table.join(kafka, ["workload", "profile"], "left")
            .select(
                *keys,
                "runs",
                F.round("produce_mb_s", 1).alias("produce_MiB_s"),
                F.round("consume_mb_s", 1).alias("consume_MiB_s"),
                F.round(F.col("produce_mb_s") / F.col("k_prod"), 2).alias("produce_vs_kafka"),
                F.round(F.col("consume_mb_s") / F.col("k_cons"), 2).alias("consume_vs_kafka"),
                F.round("of_disk", 2).alias("produce_of_disk"),
                F.round("of_net", 2).alias("consume_of_net"),
                F.round("publish_p99_ms", 1).alias("publish_p99_ms"),
                F.round(F.col("publish_p99_ms") / F.col("k_p99"), 2).alias("p99_vs_kafka"),
                F.round("e2e_p99_ms", 1).alias("e2e_p99_ms"),
            )
            .orderBy(*keys)
        )
        print(
            f"{len(files)} results file(s); medians over runs; MiB/s; ratios are system / Kafka "
            "in the same workload and profile"
        )
        out.show(200, truncate=False)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
