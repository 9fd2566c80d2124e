"""The source's Arrow schema and the step from Rust-decoded column buffers to a
``pyarrow.RecordBatch``: buffers are wrapped, never copied record by record."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
# Spark names a list's item "element"; its Arrow schema check compares the names too.
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_TYPE))

BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(BASE_FIELDS)
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _binary(columns: dict[str, Any], name: str, kind: pa.DataType, length: int) -> pa.Array:
    validity = columns[f"{name}_validity"]
    return pa.Array.from_buffers(
        kind,
        length,
        [
            None if validity is None else pa.py_buffer(validity),
            pa.py_buffer(columns[f"{name}_offsets"]),
            pa.py_buffer(columns[f"{name}_data"]),
        ],
        null_count=columns[f"{name}_null_count"],
    )


def _headers(columns: dict[str, Any], num_rows: int) -> pa.Array:
    count = len(columns["header_key_offsets"]) // 4 - 1
    keys = _binary(columns, "header_key", pa.string(), count)
    values = _binary(columns, "header_value", pa.binary(), count)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE))
    # A record without headers is a null list, as Spark's Kafka source returns it.
    validity = columns["header_validity"]
    return pa.Array.from_buffers(
        HEADERS_TYPE,
        num_rows,
        [
            None if validity is None else pa.py_buffer(validity),
            pa.py_buffer(columns["header_offsets"]),
        ],
        null_count=columns["header_null_count"],
        children=[structs],
    )


def record_batch(
    columns: dict[str, Any], topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """A RecordBatch in the source's schema from `_core.decode_arrow_columns` output."""
    n = columns["num_rows"]
    arrays = [
        _binary(columns, "key", pa.binary(), n),
        _binary(columns, "value", pa.binary(), n),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(columns["offset"])]),
        pa.Array.from_buffers(
            pa.timestamp("us", tz="UTC"), n, [None, pa.py_buffer(columns["timestamp"])]
        ),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(columns["timestamp_type"])]),
    ]
    if include_headers:
        arrays.append(_headers(columns, n))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))
