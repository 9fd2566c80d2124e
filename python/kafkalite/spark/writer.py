"""The sink: rows with key/value/topic/partition/headers columns, as Spark's Kafka sink
takes them, produced with confluent-kafka (one producer per task). Delivery is
at-least-once, as with Spark's own sink: a task retried after a failure produces again."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kafkalite.errors import KafkaliteError

# Arrow-batched writers (PySpark > 4.0) skip building a Row per record.
try:
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

    BatchBase: type = DataSourceArrowWriter
    StreamBase: type = DataSourceStreamArrowWriter
except ImportError:  # pragma: no cover - depends on the installed PySpark
    BatchBase, StreamBase = DataSourceWriter, DataSourceStreamWriter

#: Producer settings unless the user passes kafka.<key>.
PRODUCER_DEFAULTS = {"linger.ms": 5, "acks": "all"}
#: Columns the sink understands, and the types each may have.
COLUMN_TYPES = {
    "topic": (StringType,),
    "key": (StringType, BinaryType),
    "value": (StringType, BinaryType),
    "partition": (IntegerType,),
    "headers": (ArrayType,),
}


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


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _headers(value: Any) -> list[tuple[str, bytes | None]] | None:
    if not value:
        return None
    return [
        (h["key"], _bytes(h["value"])) if isinstance(h, dict) else (h.key, _bytes(h.value))
        for h in value
    ]


def _rows(items: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Rows as dicts, whether Spark hands over Arrow batches or Row objects."""
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield from item.to_pylist()
        else:
            yield item.asDict(recursive=True)


class _Producing:
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.topic = options.get("topic")
        check_schema(schema, self.topic)
        self.conf = producer_config(options)

    def _produce_all(self, items: Iterable[Any]) -> Written:
        from confluent_kafka import KafkaException, Producer

        producer = Producer(self.conf)
        failures: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        count = 0
        for row in _rows(items):
            topic = self.topic or row.get("topic")
            if not topic:
                raise ValueError("a row has a null 'topic' and no 'topic' option is set")
            kwargs: dict[str, Any] = {
                "value": _bytes(row.get("value")),
                "key": _bytes(row.get("key")),
                "on_delivery": delivered,
            }
            if row.get("partition") is not None:
                kwargs["partition"] = row["partition"]
            headers = _headers(row.get("headers"))
            if headers:
                kwargs["headers"] = headers
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:  # local queue full: let deliveries drain
                    producer.poll(0.05)
                except KafkaException as exc:
                    raise KafkaliteError(f"producing to {topic!r} failed: {exc}") from exc
            count += 1
        remaining = producer.flush(60)
        if remaining or failures:
            raise KafkaliteError(
                f"{len(failures) + remaining} of {count} records were not delivered: "
                + "; ".join(failures[:3])
            )
        return Written(count)


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
