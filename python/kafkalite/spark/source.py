"""The `kafkalite` data source: schema and option names as Spark's Kafka source."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kafkalite.spark.batch import BatchReader
from kafkalite.spark.options import SUBSCRIPTIONS, SourceOptions, parse_source_options
from kafkalite.spark.stream import StreamReader
from kafkalite.spark.writer import BatchWriter, StreamWriter

BASE_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_SCHEMA = "headers array<struct<key: string, value: binary>>"


class KafkaliteDataSource(DataSource):
    """`spark.read.format("kafkalite")`, `readStream`, `write` and `writeStream`."""

    @classmethod
    def name(cls) -> str:
        return "kafkalite"

    def _options(self, streaming: bool | None) -> SourceOptions:
        return parse_source_options(dict(self.options), streaming)

    def schema(self) -> str:
        # Reads name a subscription: parse then, so a bad option fails at load(). Writes
        # take their schema from the DataFrame and have no subscription.
        if any(name in self.options for name in SUBSCRIPTIONS):
            include = self._options(streaming=None).include_headers
        else:
            include = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return f"{BASE_SCHEMA}, {HEADERS_SCHEMA}" if include else BASE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self._options(streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(self._options(streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError("mode: the kafkalite sink only appends; use mode('append')")
        return BatchWriter(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(dict(self.options), schema)


class KafkalitePythonDataSource(KafkaliteDataSource):
    """The same source under the name `kafkalite-python`: with the JVM writer's jar on the
    session, `format("kafkalite")` is the jar's provider (batch writes in the JVM), which
    hands reads and streaming writes to this one (Spark refuses a JVM and a Python source
    under one name)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalite-python"
