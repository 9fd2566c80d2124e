"""The sink: rows with key/value/topic/partition/headers columns, as Spark's Kafka sink
takes them. Each task's Arrow batches become RecordBatch bytes in Rust
(``_core.encode_arrow_batches``: no Python object per row, Kafka's default partitioner,
compression) and go out through the project's Rust client as an idempotent producer.
Delivery is at-least-once across task retries, as with Spark's own sink: a retried task
produces again (with a new producer id)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kafkalite import _core
from kafkalite.errors import KafkaliteError
from kafkalite.spark.sender import Sender

# Arrow-batched writers (PySpark > 4.0) skip building a Row per record.
try:
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

    BatchBase: type = DataSourceArrowWriter
    StreamBase: type = DataSourceStreamArrowWriter
except ImportError:  # pragma: no cover - depends on the installed PySpark
    BatchBase, StreamBase = DataSourceWriter, DataSourceStreamWriter

#: Producer settings unless the user passes kafka.<key>.
PRODUCER_DEFAULTS = {"acks": "all", "compression.type": "none", "batch.size": 1 << 20}
#: Columns the sink understands, and the types each may have.
COLUMN_TYPES = {
    "topic": (StringType,),
    "key": (StringType, BinaryType),
    "value": (StringType, BinaryType),
    "partition": (IntegerType,),
    "headers": (ArrayType,),
}
#: Rows per Arrow batch when Spark hands over Row objects (older PySpark).
ROWS_PER_BATCH = 10_000
#: How long a topic may take to appear in metadata (just created, leader elected).
TOPIC_WAIT_S = 10.0


@dataclass
class Written(WriterCommitMessage):
    records: int


def producer_config(options: Mapping[str, str]) -> dict[str, Any]:
    """kafka.* options with the prefix dropped, as Spark's sink passes them to its producer."""
    conf: dict[str, Any] = dict(PRODUCER_DEFAULTS)
    for key, value in options.items():
        if key.lower().startswith("kafka."):
            conf[key[len("kafka.") :]] = value
    if "bootstrap.servers" not in conf:
        raise ValueError("kafka.bootstrap.servers: required (e.g. localhost:9092)")
    return conf


def check_schema(schema: StructType, topic_option: str | None) -> None:
    names = {f.name: f for f in schema.fields}
    if "value" not in names:
        raise ValueError("the sink needs a 'value' column (string or binary)")
    if "topic" not in names and not topic_option:
        raise ValueError("the sink needs a 'topic' column or the 'topic' option")
    for name, allowed in COLUMN_TYPES.items():
        if name in names and not isinstance(names[name].dataType, allowed):
            kinds = " or ".join(t.typeName() for t in allowed)
            raise ValueError(
                f"column {name!r} must be {kinds}, got {names[name].dataType.simpleString()}"
            )


def _acks(value: object) -> int:
    text = str(value).strip().lower()
    if text in ("all", "-1"):
        return -1
    if text in ("0", "1"):
        return int(text)
    raise ValueError(f"kafka.acks: must be all, -1, 0 or 1, got {value!r}")


def _arrow_batches(items: Iterable[Any]) -> Iterator[pa.RecordBatch]:
    """Arrow batches, whether Spark hands over Arrow batches or Row objects."""
    rows: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        rows.append(item.asDict(recursive=True))
        if len(rows) >= ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(rows)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows)


def _binary_column(column: pa.Array) -> tuple[Any, Any, Any, int, int]:
    """An Arrow string/binary column as the buffers `encode_arrow_batches` borrows."""
    if not pa.types.is_binary(column.type):
        column = column.cast(pa.binary())
    validity, offsets, data = (
        None if b is None else memoryview(b).cast("B") for b in column.buffers()[:3]
    )
    return (validity, offsets, data if data is not None else b"", column.offset, len(column))


def _headers(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None]:
    out: list[list[tuple[str, bytes | None]] | None] = []
    for row in column.to_pylist():
        if not row:
            out.append(None)
            continue
        pairs = []
        for h in row:
            value = h["value"]
            pairs.append((h["key"], value.encode() if isinstance(value, str) else value))
        out.append(pairs)
    return out


class _Producing:
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.topic = options.get("topic")
        check_schema(schema, self.topic)
        self.conf = producer_config(options)
        self.acks = _acks(self.conf["acks"])
        self.compression = str(self.conf["compression.type"])
        self.batch_bytes = int(self.conf["batch.size"])
        self.idempotent = str(self.conf.get("enable.idempotence", "true")).lower() == "true"

    def _produce_all(self, items: Iterable[Any]) -> Written:
        sink = _TaskProducer(self)
        try:
            for batch in _arrow_batches(items):
                sink.write(batch)
            sink.sender.flush()
            return Written(sink.sender.count)
        finally:
            sink.close()


class _TaskProducer:
    """One task's producer: a Rust client, an idempotent producer id, sequences, and the
    thread that sends what this one encodes."""

    def __init__(self, settings: _Producing) -> None:
        self.s = settings
        self.client = _core.KafkaClient(
            str(settings.conf["bootstrap.servers"]),
            client_id=str(settings.conf.get("client.id", "kafkalite-spark-sink")),
        )
        self.producer = self.client.init_producer_id() if settings.idempotent else None
        self.sequences: dict[str, dict[int, int]] = {}
        self.partitions: dict[str, int] = {}
        self.sticky = 0
        self.sender = Sender(self.client, settings.acks)

    def close(self) -> None:
        self.sender.stop()  # the sending thread must be done with the client
        self.client.close()

    def write(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        if self.s.topic or "topic" not in names:
            self._write_topic(str(self.s.topic), batch)
            return
        topics = batch.column(names.index("topic"))
        if topics.null_count:
            raise ValueError("a row has a null 'topic' and no 'topic' option is set")
        for topic in pc.unique(topics).to_pylist():
            self._write_topic(topic, batch.filter(pc.equal(topics, topic)))

    def _partition_count(self, topic: str) -> int:
        if topic not in self.partitions:
            deadline = time.monotonic() + TOPIC_WAIT_S
            while True:
                meta = self.client.metadata([topic]).topics.get(topic)
                if meta is not None and meta.error_code == 0 and meta.partitions:
                    self.partitions[topic] = len(meta.partitions)
                    break
                if time.monotonic() > deadline:
                    code = None if meta is None else meta.error_code
                    raise KafkaliteError(
                        f"topic {topic!r} is not available (error code {code}): create it first"
                    )
                time.sleep(0.2)
        return self.partitions[topic]

    def _write_topic(self, topic: str, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        partitions = self._partition_count(topic)
        keys = batch.column(names.index("key")) if "key" in names else None
        chosen = None
        if "partition" in names:
            column = pc.fill_null(batch.column(names.index("partition")), -1)
            chosen = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int32)
        headers = _headers(batch.column(names.index("headers"))) if "headers" in names else None
        sequences = self.sequences.setdefault(topic, {})
        encoded = _core.encode_arrow_batches(
            _binary_column(batch.column(names.index("value"))),
            partitions,
            keys=None if keys is None else _binary_column(keys),
            partitions=chosen,
            headers=headers,
            compression=self.s.compression,
            batch_bytes=self.s.batch_bytes,
            producer=self.producer,
            sequences=dict(sequences),
            sticky=self.sticky,
        )
        self.sticky += 1
        if self.producer is not None:
            for partition, _, count in encoded:
                sequences[partition] = (sequences.get(partition, 0) + count) & 0x7FFFFFFF
        self.sender.send(topic, encoded)


class BatchWriter(_Producing, BatchBase):  # type: ignore[misc,valid-type]
    def write(self, iterator: Iterator[Any]) -> Written:
        return self._produce_all(iterator)


class StreamWriter(_Producing, StreamBase):  # type: ignore[misc,valid-type]
    def write(self, iterator: Iterator[Any]) -> Written:
        return self._produce_all(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Each task flushed before returning: the records are already in the log.
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Records of tasks that succeeded stay in the log (at-least-once, as Spark's sink).
        pass
