"""Batch ingest: a whole topic (every partition, earliest to latest) into Parquet.

kafkalite broker &                      # or any Kafka-compatible broker
python spark/topic_to_parquet.py --topic events --out /tmp/events.parquet
"""

from __future__ import annotations

from _session import arguments, session
from pyspark.sql import DataFrame, SparkSession


def ingest(spark: SparkSession, bootstrap: str, topic: str, out: str) -> DataFrame:
    """Read `topic` and write it to `out` as Parquet; returns what was written."""
    df = (
        spark.read.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("includeHeaders", "true")
        .load()
    )
    df.write.mode("overwrite").partitionBy("partition").parquet(out)
    return spark.read.parquet(out)


def main() -> None:
    ap = arguments(__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="events.parquet")
    args = ap.parse_args()
    spark = session("kafkalite-topic-to-parquet", args.master)
    written = ingest(spark, args.bootstrap_servers, args.topic, args.out)
    print(f"wrote {written.count()} records of {args.topic!r} to {args.out}")
    spark.stop()


if __name__ == "__main__":
    main()
