"""``kafkalite conformance``: start kafkalite and Apache Kafka side by side, play every
script against both and print the report (exit status 1 on any unlisted difference)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from kafkalite import _core
from kafkalite.conformance import allowlist, report
from kafkalite.conformance.brokers import KAFKA_VERSION, running_pairs


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "conformance", help="compare protocol answers with Apache Kafka's, field by field"
    )
    p.add_argument("--quick", action="store_true", help="lowest and highest version per API only")
    p.add_argument("--api", action="append", default=[], help="only this API (repeatable)")
    p.add_argument(
        "--kafka-version", default=KAFKA_VERSION, help="Apache Kafka release to compare with"
    )
    p.add_argument(
        "--allowlist",
        type=Path,
        default=allowlist.DEFAULT_PATH,
        help="TOML file of the differences that may stay (default: the shipped one)",
    )
    p.add_argument(
        "--brokers",
        metavar="KAFKALITE,KAFKA[,KAFKALITE_SASL,KAFKA_SASL]",
        help="use brokers already running (and their SASL_PLAINTEXT listeners) instead",
    )
    p.add_argument("--json-out", type=Path, help="write the raw exchanges here")
    p.add_argument(
        "-v", "--show-allowed", action="store_true", help="print allowed differences too"
    )
    p.set_defaults(func=run)


def play(
    kafkalite: str, kafka: str, args: argparse.Namespace, sasl: tuple[str, str] | None = None
) -> dict:  # type: ignore[type-arg]
    raw = _core.conformance_run(
        kafkalite, kafka, quick=args.quick, apis=args.api or None, sasl=sasl
    )
    return json.loads(raw)


def run(args: argparse.Namespace) -> int:
    entries = allowlist.load(args.allowlist)
    if args.brokers:
        kafkalite, kafka, *rest = args.brokers.split(",")
        sasl = (rest[0], rest[1]) if len(rest) == 2 else None
        data = play(kafkalite, kafka, args, sasl)
    else:
        with tempfile.TemporaryDirectory(prefix="kafkalite-conformance-") as tmp:
            with running_pairs(Path(tmp), args.kafka_version) as (plain, sasl):
                data = play(*plain, args, sasl)
    if args.json_out:
        args.json_out.write_text(json.dumps(data, indent=1))
    outcome = report.judge(data, entries)
    report.write(outcome, sys.stdout, verbose=args.show_allowed)
    return 0 if outcome.ok else 1
