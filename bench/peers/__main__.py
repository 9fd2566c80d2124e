"""python -m bench.peers SUITE [--brokers kafkalite,kafka] [...] — see bench/peers/__init__.py."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.peers import franz_go, librdkafka, page, pysuite
from bench.peers.common import (
    BROKERS,
    CLUSTER_BROKERS,
    FAIL,
    PASS,
    REPO,
    SKIP,
    SuiteError,
    broker,
    compare,
    save,
)

SUITES = ("franz-go", "librdkafka", *pysuite.SUITES)


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


def run_librdkafka(args: argparse.Namespace, work: Path) -> None:
    """Single nodes (kafkalite, kafka) write librdkafka.json; 3-broker clusters
    (--cluster: kafkalite-cluster, kafka-cluster) librdkafka-cluster.json."""
    librdkafka.build()  # before any broker starts: a fetch or build error stops here
    default = librdkafka.CLUSTER_TESTS if args.cluster else None
    tests = [t.strip() for t in args.run.split(",") if t.strip()] if args.run else default
    bad = [t for t in tests or [] if not (len(t) == 4 and t.isdigit())]
    if bad:
        raise SuiteError(f"--run takes test numbers (e.g. 0067,0081), not {', '.join(bad)}")
    replicas = CLUSTER_BROKERS if args.cluster else 1
    extra = librdkafka.broker_settings(replicas)
    racks = librdkafka.rack_settings(replicas)
    suite = "librdkafka-cluster" if args.cluster else "librdkafka"
    meta = {
        "suite": suite,
        "version": librdkafka.VERSION,
        "source": f"npm {librdkafka.NPM_PACKAGE}@{librdkafka.NPM_VERSION} (its "
        f"deps/librdkafka: librdkafka {librdkafka.VERSION} with tests/), built with "
        f"./configure {' '.join(librdkafka.CONFIGURE_ARGS)}; tests/test-runner "
        f"{' '.join(librdkafka.RUNNER_ARGS)}, TEST_KAFKA_VERSION="
        f"{librdkafka.TEST_KAFKA_VERSION}, test.timeout.multiplier="
        f"{librdkafka.TIMEOUT_MULTIPLIER}, KAFKA_PATH with Kafka "
        f"{librdkafka.TEST_KAFKA_VERSION}'s kafka-topics.sh, kafka-acls.sh, kafka-configs.sh",
        "command": librdkafka.command(tests, args.cluster),
        "patch": "",
    }
    for kind in args.brokers:
        print(f"librdkafka {librdkafka.VERSION} against {BROKERS[kind]} ...", flush=True)
        started = time.monotonic()
        with broker(kind, work, extra, racks) as bootstrap:
            results = librdkafka.run(bootstrap, work / f"librdkafka-{kind}", tests)
        took = time.monotonic() - started
        settings = {**_settings(kind), **extra, "broker.rack": "RACK<broker id>"}
        path = save(suite, meta, kind, results, took, settings)
        _summary(kind, results, took)
        print(f"  -> {path}", flush=True)


def _settings(kind: str) -> dict[str, str]:
    from bench.peers.common import (
        CLUSTER_SETTINGS,
        KAFKA_CLUSTER_ONLY,
        KAFKA_ONLY,
        SETTINGS,
    )

    listeners = {"advertised.listeners": "PLAINTEXT://<its loopback address>"}
    base = CLUSTER_SETTINGS if kind.endswith("-cluster") else SETTINGS
    own = {"kafka": KAFKA_ONLY, "kafka-cluster": KAFKA_CLUSTER_ONLY}.get(kind, {})
    return {**base, **listeners, **own}


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
        help=f"comma-separated, of {', '.join(BROKERS)} (default: kafkalite,kafka; "
        "with --cluster kafkalite-cluster,kafka-cluster)",
    )
    parser.add_argument(
        "--run",
        help="only tests matching this (go test -run; pytest -k for Python suites; "
        "librdkafka: test numbers, e.g. 0067,0081)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="librdkafka: its cluster tests (0067, 0081, 0101, 0103) on 3 brokers "
        "(default brokers: kafkalite-cluster,kafka-cluster)",
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
            if args.suite == "franz-go":
                print(franz_go.build())
            elif args.suite == "librdkafka":
                print(librdkafka.build())
            else:
                print(pysuite.SUITES[args.suite].build())
        except SuiteError as e:
            print(f"{args.suite}: {e}", file=sys.stderr)
            return 2
        return 0
    if args.cluster and args.suite != "librdkafka":
        parser.error("--cluster is librdkafka's (its cluster tests)")
    if args.brokers is None:
        args.brokers = "kafkalite-cluster,kafka-cluster" if args.cluster else "kafkalite,kafka"
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = [b for b in args.brokers if b not in BROKERS]
    if unknown:
        parser.error(f"unknown broker(s) {', '.join(unknown)} (known: {', '.join(BROKERS)})")
    work = args.work or Path(tempfile.mkdtemp(prefix=f"peers-{args.suite}-"))
    print(f"work dir (broker data, logs, raw results): {work}", flush=True)
    try:
        runner = {"franz-go": run_franz_go, "librdkafka": run_librdkafka}
        runner.get(args.suite, run_python)(args, work)
    except SuiteError as e:
        print(f"{args.suite}: {e}", file=sys.stderr)
        return 2
    from bench.peers.common import load, runs_of

    suite = "librdkafka-cluster" if args.cluster else args.suite
    verdicts = compare(runs_of(load(suite)))
    print(", ".join(f"{len(v)} {k}" for k, v in verdicts.items()))
    for name in verdicts["differs"]:
        print(f"  differs: {name}")
    print(page.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
