"""One local[2] SparkSession for the whole test session (starting one costs ~15 s), with
Spark's own Kafka connector on its classpath when it can be fetched from Maven Central."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed (pip install '.[spark]')")

from pyspark.sql import SparkSession  # noqa: E402

from kafkalite.spark import register  # noqa: E402
from kafkalite.spark.jvm_connector import ConnectorUnavailable, connector_jars  # noqa: E402


@dataclass(frozen=True)
class JvmConnector:
    jars: list[Path]
    #: Why the jars are missing, when they are.
    unavailable: str | None


@pytest.fixture(scope="session")
def jvm_connector() -> JvmConnector:
    try:
        return JvmConnector(connector_jars(pyspark.__version__), None)
    except ConnectorUnavailable as exc:
        return JvmConnector([], str(exc))


@pytest.fixture(scope="session")
def spark(jvm_connector: JvmConnector) -> Iterator[SparkSession]:
    # Workers must run this interpreter, which has kafkalite installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark on loopback only; nor does it then need the machine's host name to resolve
    # (a fresh container or chroot may not list it in /etc/hosts).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("kafkalite-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
    )
    if jvm_connector.jars:
        builder = builder.config("spark.jars", ",".join(str(p) for p in jvm_connector.jars))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
