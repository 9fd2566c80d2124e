"""``kafkalite log scrub``: verify every batch of a stopped broker's logs, report the
damaged ones, and apply the operator's choice: leave them refused (CORRUPT_MESSAGE, the
default), serve around them (``--skip``) or cut each damaged partition there
(``--truncate``). The running broker's scrubber finds and refuses damage on its own; what
to do about it is this command's decision, taken with the broker stopped."""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
from pathlib import Path

from kafkalite import _core


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    log = sub.add_parser("log", help="inspect a stopped broker's log dirs")
    actions = log.add_subparsers(dest="action", required=True)
    scrub = actions.add_parser(
        "scrub", help="verify every batch's CRC and report (or skip, or truncate) the damaged ones"
    )
    scrub.add_argument("--log-dirs", required=True, help="the broker's log.dirs (comma-separated)")
    scrub.add_argument("--topic", help="only this topic's partitions")
    choice = scrub.add_mutually_exclusive_group()
    choice.add_argument(
        "--skip", action="store_true", help="serve around damaged batches (an offset gap)"
    )
    choice.add_argument(
        "--truncate",
        action="store_true",
        help="cut each damaged partition at its first damaged offset (later data is lost)",
    )
    scrub.add_argument("--json", action="store_true", help="print the report as JSON")
    scrub.set_defaults(func=_scrub)


def partition_dirs(log_dir: Path, topic: str | None) -> list[Path]:
    """Partition dirs (``<topic>-<n>``) of one log dir, topics being deleted left out."""
    out = []
    for d in sorted(log_dir.iterdir()):
        name, sep, index = d.name.rpartition("-")
        if not (d.is_dir() and sep and index.isdigit()) or name.endswith("-delete"):
            continue
        if topic is None or name == topic:
            out.append(d)
    return out


def _scrub(args: argparse.Namespace) -> int:
    action = "skip" if args.skip else "truncate" if args.truncate else None
    report = []
    for raw in args.log_dirs.split(","):
        log_dir = Path(raw.strip())
        if not log_dir.is_dir():
            print(f"kafkalite log scrub: {log_dir} is not a directory", file=sys.stderr)
            return 2
        with (log_dir / ".lock").open("a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(
                    f"kafkalite log scrub: {log_dir} is in use by a running broker; stop it first",
                    file=sys.stderr,
                )
                return 2
            for d in partition_dirs(log_dir, args.topic):
                with _core.PartitionLog(d) as log:
                    marks = log.scrub(action)
                    end = log.log_end_offset
                for segment, start, stop, first, mark_action, why in marks:
                    report.append(
                        {
                            "partition": d.name,
                            "segment": segment,
                            "bytes": [start, stop],
                            "first_offset": first,
                            "action": "truncated" if action == "truncate" else mark_action,
                            "log_end_offset": end,
                            "why": why,
                        }
                    )
    if args.json:
        print(json.dumps(report))
    elif not report:
        print("no damaged batches")
    for r in [] if args.json else report:
        print(
            f"{r['partition']}: segment {r['segment']} bytes {r['bytes'][0]}..{r['bytes'][1]} "
            f"(offset {r['first_offset']} or later): {r['why']} [{r['action']}]"
        )
    return 1 if report and action is None else 0
