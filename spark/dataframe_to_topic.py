"""DataFrame -> topic: rows with key/value (and optionally topic, partition, headers)
columns, as Spark's Kafka sink takes them. Here: 10,000 generated events.

    python spark/dataframe_to_topic.py --topic events --rows 10000
"""

from __future__ import annotations

from _session import arguments, session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def events(spark: SparkSession, rows: int) -> DataFrame:
    """`rows` events over 100 users: key = user, value = a JSON document, one header."""
    return spark.range(rows).select(
        F.concat(F.lit("user-"), (F.col("id") % 100).cast("string")).alias("key"),
        F.to_json(F.struct(F.col("id"), (F.col("id") * 7 % 1000).alias("amount"))).alias("value"),
        F.array(F.struct(F.lit("source").alias("key"), F.lit(b"example").alias("value"))).alias(
            "headers"
        ),
    )


def write(df: DataFrame, bootstrap: str, topic: str) -> None:
    (
        df.write.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )


def main() -> None:
    ap = arguments(__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000)
    args = ap.parse_args()
    spark = session("kafkalite-dataframe-to-topic", args.master)
    write(events(spark, args.rows), args.bootstrap_servers, args.topic)
    print(f"wrote {args.rows} records to {args.topic!r}")
    spark.stop()


if __name__ == "__main__":
    main()
