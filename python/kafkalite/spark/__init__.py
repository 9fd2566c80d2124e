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

from kafkalite.spark.source import KafkaliteDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Make `format("kafkalite")` available in `spark` (readers, streams and writers)."""
    spark.dataSource.register(KafkaliteDataSource)


__all__ = ["KafkaliteDataSource", "register"]
