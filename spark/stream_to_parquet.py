"""Streaming ingest: a topic into Parquet, micro-batch by micro-batch. The checkpoint holds
the offsets, so a stopped and restarted run continues where it left off and writes each
record exactly once.

    python spark/stream_to_parquet.py --topic events --out /tmp/events-stream \
        --checkpoint /tmp/events-checkpoint            # Ctrl-C to stop
    python spark/stream_to_parquet.py ... --available-now   # catch up, then exit
"""

from __future__ import annotations

from _session import arguments, session
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery


def start(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    out: str,
    checkpoint: str,
    available_now: bool = False,
    max_offsets_per_trigger: int | None = None,
) -> StreamingQuery:
    reader = (
        spark.readStream.format("kafkalite")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets_per_trigger:
        # PySpark 4.0 has no admission control for Python sources: there an available-now
        # run would stop after one capped micro-batch, so leave the cap off for it.
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    stream = reader.load()
    writer = (
        stream.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
    )
    writer = (
        writer.trigger(availableNow=True)
        if available_now
        else writer.trigger(processingTime="1 second")
    )
    return writer.start()


def main() -> None:
    ap = arguments(__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="events-stream")
    ap.add_argument("--checkpoint", default="events-checkpoint")
    ap.add_argument("--available-now", action="store_true", help="catch up, then exit")
    ap.add_argument("--max-offsets-per-trigger", type=int, help="records per micro-batch")
    args = ap.parse_args()
    spark = session("kafkalite-stream-to-parquet", args.master)
    query = start(
        spark,
        args.bootstrap_servers,
        args.topic,
        args.out,
        args.checkpoint,
        args.available_now,
        args.max_offsets_per_trigger,
    )
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    print(f"{args.out}: {spark.read.parquet(args.out).count()} records")
    spark.stop()


if __name__ == "__main__":
    main()
