"""``kafkalite bench run WORKLOAD [--profile P] [--systems kafkalite,kafka] [--quick]`` and
``kafkalite bench list`` (the shipped workloads and hardware profiles)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalite.bench.systems import SYSTEMS

EXIT_USAGE = 2
EXIT_FAILED = 1
DRIVERS = ("confluent", "java")
# Modules of the `bench` extra that a run needs before it can finish (workload files, plots);
# checked up front so a missing one is a one-line hint, not a traceback after the run.
EXTRA_MODULES = ("yaml", "matplotlib")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``bench`` (with ``run`` and ``list``) to the ``kafkalite`` command's subparsers."""
    bench = subparsers.add_parser("bench", help="benchmarks side by side with Apache Kafka")
    sub = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run one workload file against each system")
    run.add_argument("workload", help="shipped workload name or YAML file (see `bench list`)")
    run.add_argument(
        "--profile", help="shipped hardware profile name(s) joined by '+', or a TOML file"
    )
    run.add_argument(
        "--systems", default="kafkalite,kafka", help=f"comma-separated, from {', '.join(SYSTEMS)}"
    )
    run.add_argument("--quick", action="store_true", help="short phases: a few minutes per system")
    run.add_argument("--runs", type=int, default=None, help="repeat each system (medians)")
    run.add_argument(
        "--drivers", default="confluent,java", help="confluent and/or java (Kafka's perf tools)"
    )
    run.add_argument("--out", type=Path, help="results directory (default bench-results/<run>)")
    run.add_argument(
        "--data-dir", type=Path, help="where brokers keep data (its filesystem is measured)"
    )
    run.add_argument("--no-limits", action="store_true", help="skip fio/iperf3")
    run.add_argument("--keep-data", action="store_true", help="keep broker data after the run")
    run.add_argument(
        "--no-pin",
        action="store_true",
        help="let broker and clients share every core (default: broker on one, clients on others)",
    )
    run.set_defaults(func=handler)
    listing = sub.add_parser("list", help="the shipped workloads and hardware profiles")
    listing.set_defaults(func=list_handler)
    return bench


def _missing_extra() -> str | None:
    """The message for a missing module of the `bench` extra, or None when all are there."""
    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"the Python module {missing[0]!r} is missing: install kafkalite[bench] "
        "(in a checkout: pip install '.[bench]')"
    )


def list_handler(args: argparse.Namespace) -> int:
    if (missing := _missing_extra()) is not None:
        return _fail(missing)
    from kafkalite.bench.profiles import available_profiles, load_profile
    from kafkalite.bench.workload import available_workloads, load_workload

    print("workloads:")
    for name in available_workloads():
        print(f"  {name:<24} {load_workload(name).description}")
    print("hardware profiles:")
    for name in available_profiles():
        print(f"  {name:<24} {load_profile(name).description}")
    return 0


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"kafkalite bench: {message}", file=sys.stderr)
    return code


def _terminate(signum: int, _frame: Any) -> None:
    # SIGTERM unwinds like Ctrl-C so every finally: stops brokers and undoes profiles.
    raise KeyboardInterrupt(f"signal {signum}")


def handler(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `kafkalite --help` must not need the bench extras.
    if (missing := _missing_extra()) is not None:
        return _fail(missing)
    from kafkalite.bench import harness, plots, report
    from kafkalite.bench.workload import WorkloadError, load_workload

    try:
        workload = load_workload(args.workload)
    except WorkloadError as e:
        return _fail(str(e))
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems:
        return _fail(
            f"unknown system {bad[0] if bad else '(none)'!r} in --systems; "
            f"known: {', '.join(SYSTEMS)}"
        )
    drivers = tuple(d.strip() for d in args.drivers.split(","))
    bad = [d for d in drivers if d not in DRIVERS]
    if bad:
        return _fail(f"unknown driver {bad[0]!r} in --drivers; known: {', '.join(DRIVERS)}")
    runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    if not 1 <= runs <= 20:
        return _fail(f"--runs must be 1..20, got {runs}")
    profile = None
    if args.profile:
        from kafkalite.bench.profiles import ProfileError, load_profile

        try:
            profile = load_profile(args.profile)
        except ProfileError as e:
            return _fail(str(e))
    if args.quick:
        workload = workload.quick()
    run_id = time.strftime("%Y%m%dT%H%M%S")
    out = args.out or Path("bench-results") / f"{workload.name}-{run_id}"
    own_data = args.data_dir is None
    data_root = Path(tempfile.mkdtemp(prefix="kafkalite-bench-")) if own_data else args.data_dir
    opts = harness.RunOptions(
        workload=workload,
        systems=systems,
        out_dir=out,
        data_root=data_root,
        quick=args.quick,
        runs=runs,
        drivers=drivers,
        profile=profile,
        measure_limits=not args.no_limits,
        pin=not args.no_pin,
    )
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        results = harness.run(opts)
    except KeyboardInterrupt:
        return _fail("interrupted; brokers stopped and profiles removed", 130)
    except Exception as e:  # a failed run is reported, not a traceback
        return _fail(f"run failed: {type(e).__name__}: {e}", EXIT_FAILED)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if own_data and not args.keep_data:
            shutil.rmtree(data_root, ignore_errors=True)
    rows = results.rows
    made = plots.write_plots(out, rows)
    path = report.write_report(out, rows, systems, made)
    for name in systems:
        summary = report.system_summary(rows, name)
        if summary["runs"]:
            print(
                report.perf_test_line(summary)
                + (f" [{summary['note']}]" if summary["note"] else "")
            )
    print(
        f"results: {out / 'results.jsonl'}; report: {path}; plots: {', '.join(made)}",
        file=sys.stderr,
    )
    print(json.dumps(report.headline(rows, systems)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkalite")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))
