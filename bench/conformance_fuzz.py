"""Mutation fuzzing of kafkalite against Apache Kafka, seeded from the conformance scripts.

    python bench/conformance_fuzz.py --minutes 10 [--compare-every 10] [--out DIR]

Starts kafkalite's daemon and Apache Kafka 4.4.0 side by side (the conformance runner's
brokers and settings), records the requests of the quick conformance scripts, then mutates
them for the given time: every mutated frame goes to kafkalite, every Nth also to Kafka.
Saved cases (kafkalite crashed, hung, or accepted what Kafka refused) go to
``fuzz-cases.json`` in the output directory; hangs and accepted cases that a ``[[fuzz]]``
entry of the conformance allowlist covers are listed with its reason, the rest are
unlisted. Both brokers' logs are copied there too. The last line is JSON with the counts;
the exit status is 1 on a crash or an unlisted case.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kafkalite import _core
from kafkalite.bench import kafka_ref
from kafkalite.conformance import allowlist
from kafkalite.conformance.brokers import KAFKA_VERSION, running_pair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--compare-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--kafka-version", default=KAFKA_VERSION)
    parser.add_argument(
        "--allowlist",
        type=Path,
        default=allowlist.DEFAULT_PATH,
        help="TOML file whose [[fuzz]] entries list the cases that may stay",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "conformance-fuzz")
    parser.add_argument(
        "--kafka-heap",
        default="4G",
        help="Kafka's heap (-Xms/-Xmx): the fuzzed CreateTopics and CreatePartitions make "
        "thousands of partitions, and in Kafka's default 1G the JVM spends minutes in GC, "
        "answering nothing (default 4G)",
    )
    args = parser.parse_args(argv)
    kafka_ref.KAFKA_HEAP_OPTS = [f"-Xms{args.kafka_heap}", f"-Xmx{args.kafka_heap}"]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafkalite-fuzz-") as tmp:
        # The janitor deletes fuzz-made topics; Kafka keeps a deleted log's files open
        # for this delay (60 s by default), and they count against its file limit.
        kafka_only = {"log.segment.delete.delay.ms": "1000"}
        try:
            with running_pair(Path(tmp), args.kafka_version, kafka_only) as (kafkalite, kafka):
                raw = _core.conformance_fuzz(
                    kafkalite, kafka, args.minutes * 60, args.compare_every, args.seed
                )
        finally:
            for log in Path(tmp).glob("*.log"):
                shutil.copy(log, args.out / log.name)
    report = json.loads(raw)
    cases = report.pop("cases")
    (args.out / "fuzz-cases.json").write_text(json.dumps(cases, indent=1))
    listed, unlisted = allowlist.judge_fuzz(cases, allowlist.load_fuzz(args.allowlist))
    rate = report["kafkalite_requests"] / max(report["seconds"], 1e-9)
    print(
        f"{report['kafkalite_requests']} mutated requests to kafkalite ({rate:.0f}/s), "
        f"{report['kafka_requests']} also to Kafka ({report['kafka_answered']} answered: "
        f"compared); {report['crashes']} crashes, "
        f"{report['hangs']} hangs ({report['slow']} more answered when asked again: slow, "
        f"not hung), {report['accepted_where_kafka_refuses']} accepted where "
        f"Kafka refused; cases in {args.out / 'fuzz-cases.json'}; the janitor deleted "
        f"{report['kafkalite_topics_deleted']} fuzz-made topics on kafkalite and "
        f"{report['kafka_topics_deleted']} on Kafka"
    )
    for entry, count in listed.items():
        print(f"  listed ({count}): {entry.api} {entry.why} /{entry.request}/: {entry.reason}")
    for case in unlisted[:20]:
        request = case.get("request", "")[:300]
        print(f"  UNLISTED {case['why']}: {case['api']} v{case['version']}: {request}")
    # Cases past the saved ones cannot be judged: they count as unlisted.
    unsaved = max(0, report["hangs"] + report["accepted_where_kafka_refuses"] - len(cases))
    summary = {
        **report,
        "listed": sum(listed.values()),
        "unlisted": len(unlisted) + unsaved,
        "seed": args.seed,
    }
    print(json.dumps(summary))
    return 1 if report["crashes"] or summary["unlisted"] else 0


if __name__ == "__main__":
    sys.exit(main())
