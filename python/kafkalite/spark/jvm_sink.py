"""kafkalite's JVM writer: a DataSource V2 writer in the Spark JVM (spark/jvm) that copies
each row's bytes into a buffer of the Rust producer (rust/spark-jni) and hands it over a
chunk at a time over JNI. No Python worker sits in between, so Spark does not convert rows
to Arrow for one: the Python writer's floor. With the jar on the session,
`format("kafkalite")` batch writes go to it (the jar's provider hands reads and streaming
writes to the Python data source, registered as `kafkalite-python`);
`format("kafkalite-jvm")` is the writer alone.

Both files are built by scripts/build-spark-jvm.sh into this package's `jvm/` folder (a
wheel built afterwards ships them); `register()` puts the jar on the session when they are
there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The format name of the JVM writer alone (batch writes only).
FORMAT = "kafkalite-jvm"
#: The format name of the Python data source alone.
PYTHON_FORMAT = "kafkalite-python"
JVM_DIR = Path(__file__).parent / "jvm"
JAR = JVM_DIR / "kafkalite-spark.jar"
LIBRARY = JVM_DIR / "libkafkalite_spark_jni.so"
#: The Spark conf key the writer reads the JNI library's path from (next to the jar
#: otherwise, which a jar copied by Spark into a work folder no longer is).
LIBRARY_CONF = "spark.kafkalite.jni.library"


def built() -> bool:
    """Whether scripts/build-spark-jvm.sh has built the jar and the JNI library."""
    return JAR.is_file() and LIBRARY.is_file()


def attach(spark: SparkSession) -> bool:
    """Put the JVM writer's jar on `spark` (Spark's `ADD JAR`, which makes a DataSource V2
    provider findable by name in a running session) and tell it where the JNI library is.
    Returns False, changing nothing, when the files are not built."""
    if not built():
        return False
    spark.sql(f"ADD JAR '{JAR}'")
    spark.conf.set(LIBRARY_CONF, str(LIBRARY))
    return True


__all__ = ["FORMAT", "JAR", "LIBRARY", "LIBRARY_CONF", "PYTHON_FORMAT", "attach", "built"]
