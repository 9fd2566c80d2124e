"""The source's options, spelled and checked as Spark's Kafka source spells them. Every
error names the option and the bad value."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

#: ListOffsets' timestamps that ask for the log start and the log end.
EARLIEST, LATEST = -2, -1

#: Options that pick topics; exactly one must be given.
SUBSCRIPTIONS = ("subscribe", "subscribePattern", "assign")

#: A per-partition spec: an offset, or EARLIEST (-2) / LATEST (-1).
PartitionOffsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: "earliest", "latest", explicit offsets (with -2/-1
    meaning earliest/latest) or timestamps (ms) resolved through ListOffsets."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    offsets: PartitionOffsets | None = None
    timestamp: int | None = None
    option: str = ""


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: str  # which of SUBSCRIPTIONS
    topics: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    assigned: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    #: What a timestamp no record reaches resolves to: "error" (Spark's default) or "latest".
    by_timestamp_strategy: str = "error"
    fetch_max_bytes: int = 16 << 20
    #: 0 read_uncommitted, 1 read_committed (Kafka's `isolation.level`): committed readers
    #: plan up to the last stable offset and skip aborted transactions.
    isolation_level: int = 0


def _get(options: Mapping[str, str], name: str) -> str | None:
    # Spark lower-cases option keys on some paths; look both ways up.
    value = options.get(name)
    if value is None:
        value = options.get(name.lower())
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = _get(options, name)
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{name}: expected true or false, got {value!r}")


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    value = _get(options, name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return number


def _json_object(name: str, value: str) -> dict[str, object]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{name}: malformed JSON {value!r} ({exc.msg}); expected e.g. "
            '{"topicA":{"0":23,"1":-2}}'
        ) from None
    if not isinstance(parsed, dict):
        raise ValueError(f"{name}: expected a JSON object, got {value!r}")
    return parsed


def parse_partition_json(name: str, value: str) -> PartitionOffsets:
    """{"topic": {"0": 23, "1": -2}} -> {(topic, 0): 23, (topic, 1): -2}."""
    out: PartitionOffsets = {}
    for topic, partitions in _json_object(name, value).items():
        if not isinstance(partitions, dict):
            raise ValueError(f"{name}: topic {topic!r} must map to an object, got {value!r}")
        for partition, number in partitions.items():
            try:
                index = int(partition)
            except ValueError:
                raise ValueError(
                    f"{name}: partition {partition!r} of topic {topic!r} is not an integer"
                ) from None
            if not isinstance(number, int) or isinstance(number, bool):
                raise ValueError(f"{name}: {topic}[{partition}] must be an integer, got {number!r}")
            out[(topic, index)] = number
    return out


def _offset_spec(options: Mapping[str, str], prefix: str, default: str) -> OffsetSpec:
    """The start or end spec, from `{prefix}OffsetsByTimestamp`, `{prefix}Timestamp` or
    `{prefix}Offsets` in the order Spark gives them precedence."""
    by_ts = _get(options, f"{prefix}OffsetsByTimestamp")
    if by_ts is not None:
        name = f"{prefix}OffsetsByTimestamp"
        specs = parse_partition_json(name, by_ts)
        for tp, ts in specs.items():
            if ts < 0:
                raise ValueError(f"{name}: timestamp {ts} for {tp[0]}[{tp[1]}] is negative")
        return OffsetSpec("timestamps", offsets=specs, option=name)
    single_ts = _get(options, f"{prefix}Timestamp")
    if single_ts is not None:
        name = f"{prefix}Timestamp"
        if not single_ts.strip().isdigit():
            raise ValueError(f"{name}: expected a timestamp in ms, got {single_ts!r}")
        return OffsetSpec("timestamp", timestamp=int(single_ts), option=name)
    name = f"{prefix}Offsets"
    value = _get(options, name)
    if value is None:
        return OffsetSpec(default, option=name)
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        return OffsetSpec(word, option=name)
    offsets = parse_partition_json(name, value)
    for tp, number in offsets.items():
        if number < EARLIEST:
            raise ValueError(
                f"{name}: {tp[0]}[{tp[1]}] = {number}; use an offset >= 0, "
                "-2 (earliest) or -1 (latest)"
            )
    return OffsetSpec("offsets", offsets=offsets, option=name)


def _subscription(options: Mapping[str, str]) -> dict[str, object]:
    given = [name for name in SUBSCRIPTIONS if _get(options, name) is not None]
    if len(given) != 1:
        raise ValueError(
            f"exactly one of {', '.join(SUBSCRIPTIONS)} must be set, got "
            f"{', '.join(given) if given else 'none'}"
        )
    name = given[0]
    value = _get(options, name) or ""
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"subscribe: no topic names in {value!r}")
        return {"subscription": name, "topics": topics}
    if name == "subscribePattern":
        try:
            return {"subscription": name, "pattern": re.compile(value)}
        except re.error as exc:
            raise ValueError(f"subscribePattern: {value!r} is not a regex ({exc})") from None
    assigned = parse_partition_json("assign", _assign_as_offsets(value))
    if not assigned:
        raise ValueError(f"assign: no partitions in {value!r}")
    return {"subscription": name, "assigned": tuple(sorted(assigned))}


def _assign_as_offsets(value: str) -> str:
    """assign is {"topic": [0, 1]}: reshape it to the offsets form to reuse its checks."""
    parsed = _json_object("assign", value)
    reshaped: dict[str, dict[str, int]] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in partitions
        ):
            raise ValueError(
                f'assign: topic {topic!r} must map to a list of partitions, e.g. {{"t":[0,1]}}'
            )
        reshaped[topic] = {str(p): 0 for p in partitions}
    return json.dumps(reshaped)


ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


def _isolation_level(options: Mapping[str, str]) -> int:
    """`kafka.isolation.level` (Spark passes `kafka.*` to its consumer) or
    `isolation.level`."""
    for name in ("kafka.isolation.level", "isolation.level"):
        value = _get(options, name)
        if value is None:
            continue
        level = ISOLATION_LEVELS.get(value.strip().lower())
        if level is None:
            raise ValueError(f"{name}: expected read_committed or read_uncommitted, got {value!r}")
        return level
    return 0


def parse_source_options(options: Mapping[str, str], streaming: bool | None) -> SourceOptions:
    """Checked options; `streaming` None (not yet known) skips the mode-specific checks."""
    servers = _get(options, "kafka.bootstrap.servers")
    if not servers:
        raise ValueError("kafka.bootstrap.servers: required (e.g. localhost:9092)")
    starting = _offset_spec(options, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(options, "ending", "latest")
    if streaming is True and ending.option and _get(options, ending.option) is not None:
        raise ValueError(f"{ending.option}: not supported by streaming queries")
    if streaming is False and starting.kind == "latest":
        raise ValueError(f"{starting.option}: 'latest' is not valid for batch queries")
    if ending.kind == "earliest" or (
        ending.offsets and any(v == EARLIEST for v in ending.offsets.values())
    ):
        raise ValueError(f"{ending.option}: 'earliest' (-2) is not valid as an ending offset")
    strategy = (_get(options, "startingOffsetsByTimestampStrategy") or "error").lower()
    if strategy not in ("error", "latest"):
        raise ValueError(
            f"startingOffsetsByTimestampStrategy: expected error or latest, got {strategy!r}"
        )
    max_offsets = _positive_int(options, "maxOffsetsPerTrigger")
    if max_offsets is not None and streaming is False:
        max_offsets = None  # Spark ignores it in batch queries too.
    return SourceOptions(
        bootstrap_servers=servers,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_offsets,
        min_partitions=_positive_int(options, "minPartitions"),
        include_headers=_bool(options, "includeHeaders", False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        by_timestamp_strategy=strategy,
        fetch_max_bytes=_positive_int(options, "fetch.max.bytes") or (16 << 20),
        isolation_level=_isolation_level(options),
        **_subscription(options),  # type: ignore[arg-type]
    )


__all__ = [
    "LATEST",
    "OffsetSpec",
    "PartitionOffsets",
    "SourceOptions",
    "parse_partition_json",
    "parse_source_options",
]
