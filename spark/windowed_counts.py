"""A windowed aggregation: records per key per minute (event time = the record timestamp),
updated as records arrive and printed to the console.

    python spark/windowed_counts.py --topic events
"""

from __future__ import annotations

from _session import arguments, session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def counts_per_key_per_minute(stream: DataFrame) -> DataFrame:
    """(window start, window end, key, count) over 1-minute tumbling windows; records more
    than 2 minutes late are dropped so the state stays bounded."""
    return (
        stream.withWatermark("timestamp", "2 minutes")
        .groupBy(F.window("timestamp", "1 minute"), F.col("key").cast("string").alias("key"))
        .count()
        .select("window.start", "window.end", "key", "count")
    )


def read_stream(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (
        spark.readStream.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0]).parse_args()
    spark = session("kafkalite-windowed-counts", args.master)
    counts = counts_per_key_per_minute(read_stream(spark, args.bootstrap_servers, args.topic))
    query = (
        counts.writeStream.outputMode("update")
        .format("console")
        .option("truncate", "false")
        .trigger(processingTime="5 seconds")
        .start()
    )
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
