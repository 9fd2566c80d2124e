"""The SparkSession and command-line flags the examples share."""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

from kafkalite.spark import register


def arguments(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--bootstrap-servers", default="localhost:9092")
    ap.add_argument("--topic", default="events")
    ap.add_argument("--master", default="local[2]")
    return ap


def session(app: str, master: str) -> SparkSession:
    """A SparkSession with format("kafkalite") registered (getOrCreate: an active session,
    e.g. a notebook's, is reused)."""
    # Python workers must import kafkalite: run them with this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.sql.session.timeZone", "UTC")
        # Few shuffle partitions: a local run's aggregations otherwise pay for 200 tasks.
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark
