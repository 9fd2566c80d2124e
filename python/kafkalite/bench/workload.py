"""Workload files: OpenMessaging-Benchmark-like YAML, validated field by field.

A bad file is a user error, so every problem names the file, the field and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from kafkalite.bench.shipped import WORKLOADS, find, is_path, shipped_dir, shipped_names

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "all")
# Quick runs (`--quick`) cap each measured phase so a whole side-by-side run stays < 5 min.
QUICK_DURATION_S = 12
QUICK_WARMUP_S = 3
QUICK_BACKLOG_BYTES = 512 << 20
# The shipped workloads (package data): `kafkalite bench run NAME` resolves here.
WORKLOAD_DIR: Traversable = shipped_dir(WORKLOADS)


class WorkloadError(ValueError):
    """A workload file that cannot be run, with the offending field and value named."""


@dataclass(frozen=True)
class Workload:
    name: str
    topics: int = 1
    partitions_per_topic: int = 1
    message_size: int = 1024
    producers_per_topic: int = 1
    # Messages per second over all producers; 0 = as fast as the broker takes them.
    producer_rate: int = 0
    consumer_per_subscription: int = 1
    test_duration_seconds: float = 60
    warmup_seconds: float = 10
    acks: str = "1"
    compression: str = "none"
    keyed: bool = False
    # Catch-up: produce this many bytes first, then time consumers reading them from offset 0.
    consumer_backlog_size_bytes: int = 0
    # Latency sweep: fixed-rate runs at these fractions of the measured maximum rate.
    producer_rate_fractions: tuple[float, ...] = ()
    # A cluster of this many broker processes per system (1: the single-broker systems).
    brokers: int = 1
    replication_factor: int = 1
    min_insync_replicas: int = 1
    # When set, a second produce phase on a topic of this replication factor: the cost of
    # replication is the ratio of the two.
    baseline_replication_factor: int = 0
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def quick(self) -> Workload:
        """The same shape, shortened so `--quick` finishes in minutes."""
        return replace(
            self,
            test_duration_seconds=min(self.test_duration_seconds, QUICK_DURATION_S),
            warmup_seconds=min(self.warmup_seconds, QUICK_WARMUP_S),
            consumer_backlog_size_bytes=min(self.consumer_backlog_size_bytes, QUICK_BACKLOG_BYTES),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topics": self.topics,
            "partitionsPerTopic": self.partitions_per_topic,
            "messageSize": self.message_size,
            "producersPerTopic": self.producers_per_topic,
            "producerRate": self.producer_rate,
            "consumerPerSubscription": self.consumer_per_subscription,
            "testDurationSeconds": self.test_duration_seconds,
            "warmupSeconds": self.warmup_seconds,
            "acks": self.acks,
            "compression": self.compression,
            "keyed": self.keyed,
            "consumerBacklogSizeGB": self.consumer_backlog_size_bytes / (1 << 30),
            "producerRateFractions": list(self.producer_rate_fractions),
            "brokers": self.brokers,
            "replicationFactor": self.replication_factor,
            "minInsyncReplicas": self.min_insync_replicas,
            "baselineReplicationFactor": self.baseline_replication_factor,
        }


# YAML key -> (attribute, parser). Parsers raise ValueError with a short reason.
def _int(lo: int, hi: int):
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("must be an integer")
        if not lo <= v <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return v

    return parse


def _num(lo: float, hi: float):
    def parse(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError("must be a number")
        if not lo <= v <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return float(v)

    return parse


def _choice(options: tuple[str, ...]):
    def parse(v: Any) -> str:
        s = str(v).lower() if not isinstance(v, bool) else ""
        if s == "-1":
            s = "all"  # Kafka spells acks=all as -1 too
        if s not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return s

    return parse


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


def _fractions(v: Any) -> tuple[float, ...]:
    if not isinstance(v, list) or not v:
        raise ValueError("must be a non-empty list of numbers in (0, 1]")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= 1:
            raise ValueError(f"entry {x!r} must be a number in (0, 1]")
        out.append(float(x))
    return tuple(out)


def _backlog(v: Any) -> int:
    return int(_num(0, 1024)(v) * (1 << 30))


FIELDS = {
    "name": ("name", str),
    "description": ("description", str),
    "topics": ("topics", _int(1, 100)),
    "partitionsPerTopic": ("partitions_per_topic", _int(1, 1000)),
    "messageSize": ("message_size", _int(1, 1 << 20)),
    "producersPerTopic": ("producers_per_topic", _int(1, 64)),
    "producerRate": ("producer_rate", _int(0, 100_000_000)),
    "consumerPerSubscription": ("consumer_per_subscription", _int(0, 64)),
    "subscriptionsPerTopic": (None, _int(0, 1)),  # OMB field; one subscription supported
    "testDurationSeconds": ("test_duration_seconds", _num(1, 3600)),
    "warmupSeconds": ("warmup_seconds", _num(0, 3600)),
    "acks": ("acks", _choice(ACKS)),
    "compression": ("compression", _choice(COMPRESSIONS)),
    "keyed": ("keyed", _bool),
    "consumerBacklogSizeGB": ("consumer_backlog_size_bytes", _backlog),
    "producerRateFractions": ("producer_rate_fractions", _fractions),
    "brokers": ("brokers", _int(1, 9)),
    "replicationFactor": ("replication_factor", _int(1, 9)),
    "minInsyncReplicas": ("min_insync_replicas", _int(1, 9)),
    "baselineReplicationFactor": ("baseline_replication_factor", _int(0, 9)),
}


def parse_workload(data: Any, source: str = "<workload>") -> Workload:
    if not isinstance(data, dict):
        raise WorkloadError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in FIELDS:
            known = ", ".join(sorted(FIELDS))
            raise WorkloadError(f"{source}: unknown field {key!r} (known fields: {known})")
        attr, parse = FIELDS[key]
        try:
            parsed = parse(value)
        except ValueError as e:
            raise WorkloadError(f"{source}: field {key!r} = {value!r}: {e}") from None
        if attr is not None:
            kwargs[attr] = parsed
    kwargs.setdefault("name", Path(source).stem)
    w = Workload(**kwargs)
    if w.warmup_seconds >= w.test_duration_seconds:
        raise WorkloadError(
            f"{source}: warmupSeconds ({w.warmup_seconds:g}) must be less than "
            f"testDurationSeconds ({w.test_duration_seconds:g})"
        )
    for key, value in (
        ("replicationFactor", w.replication_factor),
        ("baselineReplicationFactor", w.baseline_replication_factor),
    ):
        if value > w.brokers:
            raise WorkloadError(f"{source}: {key} ({value}) exceeds brokers ({w.brokers})")
    if w.min_insync_replicas > w.replication_factor:
        raise WorkloadError(
            f"{source}: minInsyncReplicas ({w.min_insync_replicas}) exceeds "
            f"replicationFactor ({w.replication_factor})"
        )
    if w.producer_rate_fractions and w.producer_rate:
        raise WorkloadError(
            f"{source}: producerRateFractions needs producerRate: 0 (the maximum is measured)"
        )
    return w


def available_workloads(directory: Traversable = WORKLOAD_DIR) -> list[str]:
    return shipped_names(directory, ".yaml")


def load_workload(spec: str | Path, directory: Traversable = WORKLOAD_DIR) -> Workload:
    """A workload by file path or by name of a shipped one (bench/workloads/)."""
    p: Traversable | None
    if is_path(spec, ".yaml"):
        p = Path(spec)
    else:
        p = find(str(spec), directory, ".yaml")
        if p is None:
            names = ", ".join(available_workloads(directory)) or "none"
            raise WorkloadError(f"unknown workload {spec!r} (available: {names})")
    try:
        text = p.read_text()
    except OSError as e:
        raise WorkloadError(f"cannot read workload {p}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise WorkloadError(f"{p}: not valid YAML: {e}") from None
    return parse_workload(data, str(p))
