"""Turning options into offsets: which partitions a query reads, where each starts and
ends, how ranges split into Spark partitions, and how `maxOffsetsPerTrigger` caps a
micro-batch. Everything here runs on the driver, once per query or trigger."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from kafkalite._core import KafkaClient
from kafkalite.spark.options import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    PartitionOffsets,
    SourceOptions,
)

#: Kafka's UNKNOWN_TOPIC_OR_PARTITION, for topics the broker did not describe at all.
UNKNOWN = 3

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetRange:
    """One Spark input partition: offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def topic_partitions(client: KafkaClient, opts: SourceOptions) -> list[TopicPartition]:
    """The partitions the subscription names, checked against the broker's metadata."""
    if opts.subscription == "subscribePattern":
        assert opts.pattern is not None
        meta = client.metadata(None)
        return sorted(
            (p.topic, p.partition)
            for name, topic in meta.topics.items()
            if topic.error_code == 0 and not topic.is_internal and opts.pattern.fullmatch(name)
            for p in topic.partitions
        )
    names = (
        list(opts.topics)
        if opts.subscription == "subscribe"
        else sorted({t for t, _ in opts.assigned})
    )
    meta = client.metadata(names)
    found = {name: t.partitions for name, t in meta.topics.items() if t.error_code == 0}
    missing = [t for t in names if t not in found]
    if missing:
        codes = {t: meta.topics[t].error_code if t in meta.topics else UNKNOWN for t in missing}
        raise ValueError(
            f"{opts.subscription}: unknown topic(s) {', '.join(missing)} on "
            f"{opts.bootstrap_servers} (error codes {codes})"
        )
    if opts.subscription == "subscribe":
        return sorted((p.topic, p.partition) for t in names for p in found[t])
    known = {(p.topic, p.partition) for t in names for p in found[t]}
    unknown = [tp for tp in opts.assigned if tp not in known]
    if unknown:
        raise ValueError(f"assign: unknown partition(s) {unknown} on {opts.bootstrap_servers}")
    return list(opts.assigned)


def resolve(
    client: KafkaClient,
    partitions: list[TopicPartition],
    spec: OffsetSpec,
    opts: SourceOptions,
) -> PartitionOffsets:
    """Concrete offsets for `partitions` under `spec` (one ListOffsets round trip)."""
    wanted: dict[TopicPartition, int] = {}
    if spec.kind in ("earliest", "latest"):
        wanted = dict.fromkeys(partitions, EARLIEST if spec.kind == "earliest" else LATEST)
    elif spec.kind == "timestamp":
        assert spec.timestamp is not None
        wanted = dict.fromkeys(partitions, spec.timestamp)
    else:
        assert spec.offsets is not None
        _check_named_partitions(spec, partitions)
        default = EARLIEST if spec.option.startswith("starting") else LATEST
        wanted = {tp: spec.offsets.get(tp, default) for tp in partitions}
        if spec.kind == "offsets":
            explicit = {tp: o for tp, o in wanted.items() if o >= 0}
            symbolic = {tp: o for tp, o in wanted.items() if o < 0}
            return (
                {**explicit, **client.list_offsets(symbolic, opts.isolation_level)}
                if symbolic
                else explicit
            )
    # read_committed: latest is the last stable offset, so a range never ends inside an
    # open transaction.
    found = client.list_offsets(wanted, opts.isolation_level)
    if spec.kind in ("timestamp", "timestamps"):
        return _timestamp_fallbacks(client, found, spec, opts)
    return found


def _check_named_partitions(spec: OffsetSpec, partitions: list[TopicPartition]) -> None:
    assert spec.offsets is not None
    known = set(partitions)
    extra = sorted(tp for tp in spec.offsets if tp not in known)
    if extra:
        raise ValueError(
            f"{spec.option}: names partitions the query does not read: "
            + ", ".join(f"{t}[{p}]" for t, p in extra)
        )


def _timestamp_fallbacks(
    client: KafkaClient, found: PartitionOffsets, spec: OffsetSpec, opts: SourceOptions
) -> PartitionOffsets:
    """ListOffsets answers -1 when no record reaches the timestamp: an ending spec then
    means the log end; a starting spec follows `startingOffsetsByTimestampStrategy`."""
    none = [tp for tp, off in found.items() if off < 0]
    if not none:
        return found
    if spec.option.startswith("starting") and opts.by_timestamp_strategy == "error":
        raise ValueError(
            f"{spec.option}: no record at or after the timestamp in "
            + ", ".join(f"{t}[{p}]" for t, p in none)
            + " (set startingOffsetsByTimestampStrategy=latest to start at the end)"
        )
    return {**found, **client.list_offsets(dict.fromkeys(none, LATEST), opts.isolation_level)}


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Drop empty ranges; with `minPartitions` above their count, split each range into
    parts in proportion to its size (as Spark's KafkaOffsetRangeCalculator does)."""
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        # Half-up rounding, as Scala's math.round (Python's round() rounds half to even).
        parts = max(1, min(r.size, math.floor(r.size / total * min_partitions + 0.5)))
        step = r.size / parts
        bounds = [r.start + math.floor(i * step) for i in range(parts)] + [r.end]
        out.extend(
            OffsetRange(r.topic, r.partition, a, b) for a, b in itertools.pairwise(bounds) if b > a
        )
    return out


def rate_limit(
    start: PartitionOffsets, latest: PartitionOffsets, max_offsets: int
) -> PartitionOffsets:
    """Cap a micro-batch at about `max_offsets` records, spread over partitions in
    proportion to their backlog (Spark's KafkaMicroBatchStream.rateLimit)."""
    sizes = {tp: latest[tp] - start.get(tp, latest[tp]) for tp in latest}
    total = sum(s for s in sizes.values() if s > 0)
    if total <= max_offsets:
        return latest
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        size = sizes[tp]
        if size <= 0:
            out[tp] = end
            continue
        share = max_offsets * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + step)
    return out
