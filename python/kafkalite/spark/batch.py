"""The batch reader: plans offset ranges on the driver, reads each on an executor."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkalite._core import KafkaClient
from kafkalite.spark.fetcher import read_range
from kafkalite.spark.options import SourceOptions
from kafkalite.spark.planning import (
    OffsetRange,
    resolve,
    split_ranges,
    topic_partitions,
)

#: The client id the source's requests carry.
CLIENT_ID = "kafkalite-spark"


class RangePartition(InputPartition):
    """A Spark input partition carrying one offset range (pickled to the executor)."""

    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.range = rng


def read_partition(opts: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """What an executor runs for one input partition (batch and streaming alike)."""
    assert isinstance(partition, RangePartition)
    with KafkaClient(opts.bootstrap_servers, client_id=CLIENT_ID) as client:
        yield from read_range(
            client,
            partition.range,
            opts.include_headers,
            opts.fail_on_data_loss,
            opts.fetch_max_bytes,
            opts.isolation_level,
        )


def check_ranges(starts: dict, ends: dict, opts: SourceOptions) -> None:
    """An end before its start means the log lost records the query counted on."""
    for tp, end in ends.items():
        start = starts.get(tp, end)
        if end < start:
            raise ValueError(
                f"{opts.ending.option}: {tp[0]}[{tp[1]}] ends at {end}, before its "
                f"starting offset {start}"
            )


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        with KafkaClient(self.opts.bootstrap_servers, client_id=CLIENT_ID) as client:
            parts = topic_partitions(client, self.opts)
            starts = resolve(client, parts, self.opts.starting, self.opts)
            ends = resolve(client, parts, self.opts.ending, self.opts)
        check_ranges(starts, ends, self.opts)
        ranges = [OffsetRange(t, p, starts[(t, p)], ends[(t, p)]) for t, p in parts]
        planned = split_ranges(ranges, self.opts.min_partitions)
        # Spark needs at least one partition; an empty range reads nothing.
        return [RangePartition(r) for r in planned] or [RangePartition(OffsetRange("", 0, 0, 0))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.opts, partition)
