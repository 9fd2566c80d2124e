"""The micro-batch stream reader. Offsets are JSON dicts {topic: {partition: offset}}
(partition keys as strings, as JSON requires); Spark checkpoints them, so a restarted
query resumes at the last committed end and reads each record exactly once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafkalite._core import KafkaClient
from kafkalite.spark.batch import CLIENT_ID, RangePartition, read_partition
from kafkalite.spark.options import OffsetSpec, PartitionOffsets, SourceOptions
from kafkalite.spark.planning import (
    OffsetRange,
    rate_limit,
    resolve,
    split_ranges,
    topic_partitions,
)

try:  # Admission control (ReadLimit) and Trigger.AvailableNow arrived after PySpark 4.0.
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - depends on the installed PySpark
    ReadAllAvailable = ReadLimit = ReadMaxRows = None  # type: ignore[assignment,misc]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]

EARLIEST = OffsetSpec("earliest", option="startingOffsets")
LATEST = OffsetSpec("latest", option="endingOffsets")


def encode(offsets: PartitionOffsets) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def decode(offsets: dict[str, Any]) -> PartitionOffsets:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in offsets.items()
        for partition, offset in partitions.items()
    }


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._client: KafkaClient | None = None
        #: The last end offset handed out: PySpark 4.0 calls latestOffset() without start.
        self._last_end: PartitionOffsets | None = None
        #: Set by prepareForTriggerAvailableNow: never read past these.
        self._available_now: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the options only; a socket does not pickle.
        return {**self.__dict__, "_client": None}

    def client(self) -> KafkaClient:
        if self._client is None:
            self._client = KafkaClient(self.opts.bootstrap_servers, client_id=CLIENT_ID)
        return self._client

    def _latest(self) -> tuple[list[tuple[str, int]], PartitionOffsets]:
        client = self.client()
        parts = topic_partitions(client, self.opts)
        return parts, resolve(client, parts, LATEST, self.opts)

    def initialOffset(self) -> dict[str, Any]:
        client = self.client()
        parts = topic_partitions(client, self.opts)
        start = resolve(client, parts, self.opts.starting, self.opts)
        self._last_end = start
        return encode(start)

    def getDefaultReadLimit(self) -> Any:
        if self.opts.max_offsets_per_trigger is None or ReadMaxRows is None:
            return ReadAllAvailable() if ReadAllAvailable is not None else None
        return ReadMaxRows(self.opts.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()[1]

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict:
        max_rows = self._max_rows(limit)
        begin = decode(start) if start is not None else self._last_end
        if begin is None:
            # PySpark 4.0, first trigger of a run: the start (maybe a checkpointed one) is
            # not passed in, so a cap computed from the initial offsets could end before it.
            # Read everything available this once; later triggers know their start.
            begin, max_rows = decode(self.initialOffset()), None
        parts, latest = self._latest()
        if self._available_now is not None:
            latest = {tp: min(off, self._available_now.get(tp, off)) for tp, off in latest.items()}
        # Partitions that appeared since `begin` are read from their earliest offset.
        new = [tp for tp in parts if tp not in begin]
        if new:
            begin = {**begin, **resolve(self.client(), new, EARLIEST, self.opts)}
        end = rate_limit(begin, latest, max_rows) if max_rows else latest
        # Never move backwards: a shrunken log is reported as data loss when read.
        end = {tp: max(off, begin.get(tp, off)) for tp, off in end.items()}
        self._last_end = end
        return encode(end)

    def _max_rows(self, limit: Any) -> int | None:
        if limit is None:  # PySpark 4.0: no admission control, use the option directly
            return self.opts.max_offsets_per_trigger
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return int(limit.max_rows)
        return None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, until = decode(start), decode(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin = {**begin, **resolve(self.client(), new, EARLIEST, self.opts)}
        self._last_end = until
        ranges = [OffsetRange(t, p, begin[(t, p)], off) for (t, p), off in sorted(until.items())]
        return [RangePartition(r) for r in split_ranges(ranges, self.opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.opts, partition)

    def commit(self, end: dict[str, Any]) -> None:
        # Offsets live in Spark's checkpoint; nothing is committed to the broker.
        self._last_end = decode(end)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
