"""PySpark data source `kafkalite` (PySpark >= 4.0): read topics in batch and streaming
queries as Arrow, write DataFrames to topics. Options and columns are those of Spark's own
Kafka source and sink.

    from kafkalite.spark import register
    register(spark)  # once per SparkSession
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "events")
          .load())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite.spark import jvm_sink
from kafkalite.spark.source import KafkaliteDataSource, KafkalitePythonDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: Spark (>= 4.0) measures the Arrow batch it fills for a Python data source after every
#: row, to stop at this many bytes (default 64 MiB): measured, that check was 44% of the
#: JVM's time handing rows to the sink. At Int.MaxValue Spark skips it, and batches stay
#: bounded by spark.sql.execution.arrow.maxRecordsPerBatch rows.
ARROW_BATCH_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_BATCH_BYTES_UNCHECKED = str(2**31 - 1)


def register(spark: SparkSession) -> None:
    """Make `format("kafkalite")` available in `spark` (readers, streams and writers).
    When scripts/build-spark-jvm.sh has built the JVM writer, its jar goes on the session
    and `format("kafkalite")` is its provider: batch writes run in the JVM (no Python
    worker), reads and streaming writes in this package's Python data source (registered
    as `kafkalite-python`); `format("kafkalite-jvm")` is the JVM writer alone. Without
    the jar, `format("kafkalite")` is the Python data source for everything.
    `format("kafkalite-python")` is the Python data source either way.

    Unless the session sets spark.sql.execution.arrow.maxBytesPerBatch itself, sets it to
    2147483647, which turns off Spark's per-row size check of Arrow batches for Python data
    sources (and Arrow UDFs) of this session."""
    spark.dataSource.register(KafkalitePythonDataSource)
    if not jvm_sink.attach(spark):
        spark.dataSource.register(KafkaliteDataSource)
    if spark.conf.get(ARROW_BATCH_BYTES_KEY, None) is None:
        spark.conf.set(ARROW_BATCH_BYTES_KEY, ARROW_BATCH_BYTES_UNCHECKED)


__all__ = ["KafkaliteDataSource", "KafkalitePythonDataSource", "register"]
