"""python -m bench.peers SUITE [--brokers kafkalite,kafka] [...] — see bench/peers/__init__.py."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.peers import franz_go, page, pysuite
from bench.peers.common import BROKERS, FAIL, PASS, REPO, SKIP, SuiteError, broker, compare, save

SUITES = ("franz-go", *pysuite.SUITES)


def run_franz_go(args: argparse.Namespace, work: Path) -> None:
    franz_go.build()  # before any broker starts: a fetch or build error stops here
    meta = {
        "suite": "franz-go",
        "version": franz_go.VERSION,
        "source": f"Go module proxy, {franz_go.MODULE}@{franz_go.VERSION}, pkg/kgo tests "
        "(`go test -c`), KGO_SEEDS=<broker> KGO_TEST_RF=1",
        "command": franz_go.command(args.run, args.records),
        "patch": "",
    }
    for kind in args.brokers:
        print(f"franz-go {franz_go.VERSION} against {BROKERS[kind]} ...", flush=True)
        started = time.monotonic()
        with broker(kind, work) as bootstrap:
            tests = franz_go.run(bootstrap, work / f"franz-go-{kind}.jsonl", args.run, args.records)
        took = time.monotonic() - started
        path = save("franz-go", meta, kind, tests, took, _settings(kind))
        _summary(kind, tests, took)
        print(f"  -> {path}", flush=True)


def run_python(args: argparse.Namespace, work: Path) -> None:
    suite = pysuite.SUITES[args.suite]
    suite.build()
    command = f"python -m bench.peers {suite.name}"
    if args.run:
        command += f" --run '{args.run}'"
    patch = suite.patch.relative_to(REPO).as_posix() if suite.patch else ""
    meta = {
        "suite": suite.name,
        "version": suite.version,
        "source": f"PyPI sdist {suite.dist}=={suite.version}, pytest {' '.join(suite.paths)} "
        f"({', '.join(f'{k}={v}' for k, v in suite.env.items())})",
        "command": command,
        "patch": patch,
    }
    for kind in args.brokers:
        print(f"{suite.name} {suite.version} against {BROKERS[kind]} ...", flush=True)
        started = time.monotonic()
        with broker(kind, work) as bootstrap:
            tests = suite.run(bootstrap, work / f"{suite.name}-{kind}.log", args.run)
        took = time.monotonic() - started
        path = save(suite.name, meta, kind, tests, took, _settings(kind))
        _summary(kind, tests, took)
        print(f"  -> {path}", flush=True)


def _settings(kind: str) -> dict[str, str]:
    from bench.peers.common import KAFKA_ONLY, SETTINGS

    listeners = {"advertised.listeners": "PLAINTEXT://<its loopback address>"}
    return {**SETTINGS, **listeners, **(KAFKA_ONLY if kind == "kafka" else {})}


def _summary(kind: str, tests: dict, took: float) -> None:
    n = {o: sum(1 for t in tests.values() if t.outcome == o) for o in (PASS, FAIL, SKIP)}
    print(
        f"  {kind}: {n[PASS]} passed, {n[FAIL]} failed, {n[SKIP]} skipped in {took:.0f} s",
        flush=True,
    )
    failed = [(name, t) for name, t in sorted(tests.items()) if t.outcome == FAIL]
    for name, t in failed[:20]:
        print(f"    FAIL {name}: {' / '.join(t.lines[:2])[:300]}", flush=True)
    if len(failed) > 20:
        print(f"    ... and {len(failed) - 20} more", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("suite", choices=[*SUITES, "page"], help="a suite, or only the page")
    parser.add_argument(
        "--brokers",
        default="kafkalite,kafka",
        help=f"comma-separated, of {', '.join(BROKERS)} (default: kafkalite,kafka)",
    )
    parser.add_argument(
        "--run", help="only tests matching this (go test -run; pytest -k for Python suites)"
    )
    parser.add_argument("--records", type=int, help="franz-go: KGO_TEST_RECORDS")
    parser.add_argument("--work", type=Path, help="scratch dir for broker data and logs")
    parser.add_argument(
        "--build-only", action="store_true", help="fetch and build the suite, run nothing"
    )
    args = parser.parse_args(argv)
    if args.suite == "page":
        print(page.render())
        return 0
    if args.build_only:
        try:
            print(
                franz_go.build() if args.suite == "franz-go" else pysuite.SUITES[args.suite].build()
            )
        except SuiteError as e:
            print(f"{args.suite}: {e}", file=sys.stderr)
            return 2
        return 0
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = [b for b in args.brokers if b not in BROKERS]
    if unknown:
        parser.error(f"unknown broker(s) {', '.join(unknown)} (known: {', '.join(BROKERS)})")
    work = args.work or Path(tempfile.mkdtemp(prefix=f"peers-{args.suite}-"))
    print(f"work dir (broker data, logs, raw results): {work}", flush=True)
    try:
        (run_franz_go if args.suite == "franz-go" else run_python)(args, work)
    except SuiteError as e:
        print(f"{args.suite}: {e}", file=sys.stderr)
        return 2
    from bench.peers.common import load, runs_of

    verdicts = compare(runs_of(load(args.suite)))
    print(", ".join(f"{len(v)} {k}" for k, v in verdicts.items()))
    for name in verdicts["differs"]:
        print(f"  differs: {name}")
    print(page.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
