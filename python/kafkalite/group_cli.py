"""The ``kafkalite group`` verbs, after Kafka's ``kafka-consumer-groups``: list groups,
describe a group's members, committed offsets and lag, reset its committed offsets, delete
groups. They
use the admin API over the wire (librdkafka through confluent-kafka)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from kafkalite.client_cli import (
    BROKER_TIMEOUT_HELP,
    CliError,
    _admin,
    _explain,
    _verb,
    add_common_arguments,
)

# Kafka only lets an inactive group's offsets be reset: members would overwrite them.
INACTIVE_STATES = ("EMPTY", "DEAD")


def _result(future: Any, what: str, args: argparse.Namespace) -> Any:
    try:
        return future.result(args.timeout)
    except Exception as e:
        raise CliError(f"{what}: {_explain(e, args)}") from None


def _state(description: Any) -> str:
    # ConsumerGroupState.STABLE -> "STABLE"
    return str(getattr(description.state, "name", description.state)).upper()


@_verb
def group_list(args: argparse.Namespace) -> int:
    # The client must outlive its future: librdkafka cancels it when destroyed.
    admin = _admin(args)
    listing = _result(
        admin.list_consumer_groups(request_timeout=args.timeout), "listing groups", args
    )
    groups = sorted(listing.valid, key=lambda g: g.group_id)
    if args.state:
        rows = [(g.group_id, str(getattr(g.state, "name", g.state)).title()) for g in groups]
        _print_table(["GROUP", "STATE"], rows)
    else:
        for g in groups:
            print(g.group_id)
    return 0


def _committed(admin: Any, group: str, args: argparse.Namespace) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group)]
    futures = admin.list_consumer_group_offsets(request, request_timeout=args.timeout)
    result = _result(futures[group], f"fetching the offsets of group {group}", args)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _log_offsets(
    admin: Any, partitions: list[tuple[str, int]], spec: Any, args: argparse.Namespace
) -> dict[tuple[str, int], int]:
    from confluent_kafka import TopicPartition

    if not partitions:
        return {}
    request = {TopicPartition(t, p): spec for t, p in partitions}
    futures = admin.list_offsets(request, request_timeout=args.timeout)
    return {
        (tp.topic, tp.partition): _result(f, f"listing offsets of {tp.topic}", args).offset
        for tp, f in futures.items()
    }


def _print_table(header: list[str], rows: list[tuple[object, ...]]) -> None:
    cells = [header, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for row in cells:
        print(" ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _describe(admin: Any, group: str, args: argparse.Namespace) -> Any:
    futures = admin.describe_consumer_groups([group], request_timeout=args.timeout)
    return _result(futures[group], f"describing group {group}", args)


@_verb
def group_describe(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import OffsetSpec

    admin = _admin(args)
    description = _describe(admin, args.group, args)
    committed = _committed(admin, args.group, args)
    state = _state(description)
    if state == "DEAD" and not committed:
        raise CliError(f"consumer group {args.group} does not exist")
    owners: dict[tuple[str, int], Any] = {}
    for member in description.members:
        assignment = member.assignment.topic_partitions if member.assignment else []
        for tp in assignment:
            owners[(tp.topic, tp.partition)] = member
    partitions = sorted(set(committed) | set(owners))
    ends = _log_offsets(admin, partitions, OffsetSpec.latest(), args)
    rows = []
    for topic, partition in partitions:
        current = committed.get((topic, partition))
        end = ends.get((topic, partition))
        lag = end - current if current is not None and end is not None else "-"
        member = owners.get((topic, partition))
        rows.append(
            (
                args.group,
                topic,
                partition,
                "-" if current is None else current,
                "-" if end is None else end,
                lag,
                member.member_id if member else "-",
                member.host if member else "-",
                member.client_id if member else "-",
            )
        )
    if not description.members:
        print(f"Consumer group '{args.group}' has no active members.\n", file=sys.stderr)
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    _print_table([*header, "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)
    return 0


def _parse_datetime(text: str) -> int:
    """Kafka's --to-datetime format, YYYY-MM-DDTHH:mm:SS.sss, with an optional zone
    (local time without one, as Kafka does). Milliseconds since the epoch."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(
            f"--to-datetime {text!r} is not a date-time like 2026-11-23T08:00:00.000"
        ) from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


def _topic_partitions(admin: Any, spec: str, args: argparse.Namespace) -> list[tuple[str, int]]:
    """--topic T (every partition) or T:0,2 (those partitions), as Kafka's tool takes it."""
    name, _, wanted = spec.partition(":")
    topic = dict(admin.list_topics(timeout=args.timeout).topics).get(name)
    if topic is None or topic.error is not None:
        raise CliError(f"--topic {name}: topic does not exist")
    partitions = sorted(topic.partitions)
    if wanted:
        try:
            chosen = sorted({int(p) for p in wanted.split(",")})
        except ValueError:
            raise CliError(f"--topic {spec!r}: partitions must be numbers, as in T:0,1") from None
        missing = [p for p in chosen if p not in partitions]
        if missing:
            raise CliError(f"--topic {spec!r}: {name} has no partition {missing[0]}")
        partitions = chosen
    return [(name, p) for p in partitions]


def _clamp(offset: int, tp: tuple[str, int], earliest: int, latest: int) -> int:
    """An offset outside the log is moved to its nearest end, with a warning on stderr in
    the words of Kafka's tool."""
    name = f"{tp[0]}-{tp[1]}"
    if offset > latest:
        print(
            f"WARN: New offset ({offset}) is higher than latest offset for topic partition "
            f"{name}. Value will be set to {latest}",
            file=sys.stderr,
        )
        return latest
    if offset < earliest:
        print(
            f"WARN: New offset ({offset}) is lower than earliest offset for topic partition "
            f"{name}. Value will be set to {earliest}",
            file=sys.stderr,
        )
        return earliest
    return offset


def _targets(
    admin: Any,
    partitions: list[tuple[str, int]],
    committed: dict[tuple[str, int], int],
    args: argparse.Namespace,
) -> dict[tuple[str, int], int]:
    from confluent_kafka.admin import OffsetSpec

    earliest = _log_offsets(admin, partitions, OffsetSpec.earliest(), args)
    latest = _log_offsets(admin, partitions, OffsetSpec.latest(), args)
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_offset is not None:
        return {tp: _clamp(args.to_offset, tp, earliest[tp], latest[tp]) for tp in partitions}
    if args.shift_by is not None:
        unknown = [tp for tp in partitions if tp not in committed]
        if unknown:
            t, p = unknown[0]
            raise CliError(
                f"cannot shift the offset of {t}-{p}: group {args.group} has no committed "
                "offset there"
            )
        return {
            tp: _clamp(committed[tp] + args.shift_by, tp, earliest[tp], latest[tp])
            for tp in partitions
        }
    at = _log_offsets(
        admin, partitions, OffsetSpec.for_timestamp(_parse_datetime(args.to_datetime)), args
    )
    # No record at or after the time: the log end.
    return {tp: at[tp] if at[tp] >= 0 else latest[tp] for tp in partitions}


@_verb
def group_reset_offsets(args: argparse.Namespace) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    admin = _admin(args)
    state = _state(_describe(admin, args.group, args))
    if args.execute and state not in INACTIVE_STATES:
        raise CliError(
            f"assignments can only be reset if the group {args.group} is inactive, "
            f"but the current state is {state.title()}"
        )
    committed = _committed(admin, args.group, args)
    if args.all_topics:
        # As Kafka's tool: every partition the group has committed offsets for.
        partitions = sorted(committed)
        if not partitions:
            raise CliError(f"group {args.group} has no committed offsets; name topics with --topic")
    else:
        partitions = [tp for spec in args.topic for tp in _topic_partitions(admin, spec, args)]
    targets = _targets(admin, partitions, committed, args)
    if args.export:
        # kafka-consumer-groups --export: one TOPIC,PARTITION,OFFSET line per partition.
        for t, p in partitions:
            print(f"{t},{p},{targets[(t, p)]}")
    else:
        rows = [(args.group, t, p, targets[(t, p)]) for t, p in partitions]
        _print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows)
    if not args.execute:
        print("\n(dry run: nothing changed; add --execute to apply)", file=sys.stderr)
        return 0
    request = ConsumerGroupTopicPartitions(
        args.group, [TopicPartition(t, p, offset) for (t, p), offset in targets.items()]
    )
    futures = admin.alter_consumer_group_offsets([request], request_timeout=args.timeout)
    result = _result(futures[args.group], f"resetting the offsets of group {args.group}", args)
    failed = [tp for tp in result.topic_partitions if tp.error is not None]
    if failed:
        tp = failed[0]
        raise CliError(f"resetting {tp.topic}-{tp.partition} failed: {tp.error.str()}")
    return 0


# Why DeleteGroups refused a group, in a user's words (librdkafka's error names).
DELETE_REFUSALS = {
    "NON_EMPTY_GROUP": "it has active members (stop its consumers first)",
    "GROUP_ID_NOT_FOUND": "it does not exist",
}


@_verb
def group_delete(args: argparse.Namespace) -> int:
    admin = _admin(args)
    futures = admin.delete_consumer_groups(args.group, request_timeout=args.timeout)
    deleted, failed = [], []
    for group in args.group:
        try:
            futures[group].result(args.timeout)
            deleted.append(group)
        except Exception as e:
            err: Any = e.args[0] if e.args else None
            why = DELETE_REFUSALS.get(err.name() if hasattr(err, "name") else "")
            failed.append(f"group {group} not deleted: {why or _explain(e, args)}")
    if deleted:
        names = ", ".join(f"'{g}'" for g in deleted)
        print(f"Deletion of requested consumer groups ({names}) was successful.")
    if failed:
        raise CliError("; ".join(failed))
    return 0


def add_parsers(sub: Any) -> None:
    group = sub.add_parser("group", help="list, describe, reset or delete consumer groups")
    gsub = group.add_subparsers(dest="group_command", required=True, metavar="COMMAND")

    lst = gsub.add_parser("list", help="list consumer groups")
    lst.add_argument("--state", action="store_true", help="show each group's state")
    lst.set_defaults(func=group_list)

    describe = gsub.add_parser("describe", help="members, committed offsets and lag")
    describe.add_argument("group", help="consumer group id")
    describe.set_defaults(func=group_describe)

    reset = gsub.add_parser(
        "reset-offsets", help="plan (or with --execute, apply) new committed offsets"
    )
    reset.add_argument("group", help="consumer group id (it must have no active members)")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="T[:P,P]",
        help="topic, or topic:partitions (repeatable)",
    )
    scope.add_argument(
        "--all-topics",
        action="store_true",
        help="every partition the group has committed offsets for",
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the start of each log")
    to.add_argument("--to-latest", action="store_true", help="the end of each log")
    to.add_argument(
        "--to-offset", type=int, metavar="N", help="offset N (outside the log: its nearest end)"
    )
    to.add_argument(
        "--to-datetime",
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        help="the first record at or after this time (local time unless a zone is given)",
    )
    to.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="the committed offset plus N (negative: back)",
    )
    reset.add_argument(
        "--export", action="store_true", help="print the plan as CSV lines TOPIC,PARTITION,OFFSET"
    )
    reset.add_argument("--execute", action="store_true", help="apply the plan")
    reset.set_defaults(func=group_reset_offsets)

    delete = gsub.add_parser("delete", help="delete groups with no active members")
    delete.add_argument("group", nargs="+", help="consumer group id(s)")
    delete.set_defaults(func=group_delete)

    for p in (lst, describe, reset, delete):
        add_common_arguments(p, timeout_help=BROKER_TIMEOUT_HELP)
