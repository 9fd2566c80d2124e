"""Coverage-guided fuzzing of kafkalite's decoders with libFuzzer, on stable Rust.

    python bench/fuzz.py --minutes 10 [--targets request,records,recovery] [--out DIR]

Targets (``rust/fuzz``): ``request`` (a request frame through the broker's header parser and
the body decoder of every API and version it serves, Produce records included),
``records`` (RecordBatch validation, the produce path's record walk, decompression) and
``recovery`` (a partition directory opened after an unclean shutdown and read back).

Why libFuzzer through ``libfuzzer-sys``: it builds on stable Rust (the crate compiles
libFuzzer itself with the system C++ compiler) and takes LLVM's SanitizerCoverage pass
through plain ``-C passes=sancov-module`` flags; cargo-fuzz adds only nightly ``-Z`` flags
on top, and afl.rs needs ``cargo install cargo-afl`` plus a build of AFL++ and runs a
fork server per input (several times slower on this 2-core machine). Every input runs
under an allocation cap (``kafkalite_fuzz::alloc_cap``): one allocation above 256 bytes
per input byte (+1 MiB, +512 KiB of capped decompression) aborts, which libFuzzer saves as
a crash.

The corpus starts from the requests the conformance runner recorded from its scripts
(``rust/fuzz/corpus/request``, written by ``kafkalite-conformance ... --record``) plus seeds
made in code (a minimal request for every served API and version, batches of every codec,
real partition directories). A crash's input lands in ``DIR/crashes/<target>/``; with
``--save-regressions`` it is also copied to ``rust/fuzz/regressions/<target>/``, which
``cargo test -p kafkalite-fuzz`` replays. Prints a table, then a JSON line with the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "rust" / "fuzz"
TARGETS = ("request", "records", "recovery")
# SanitizerCoverage as cargo-fuzz configures it, without its nightly-only flags.
COVERAGE_FLAGS = [
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "--cfg",
    "fuzzing",
    "-Cdebug-assertions",
    "-Coverflow-checks",
]


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, text=True, **kwargs)  # type: ignore[call-overload]


def setup() -> None:
    """The fuzzer's own tooling: a C++ compiler for libFuzzer's sources (Debian)."""
    if shutil.which("c++") is None:
        run(["apt-get", "install", "-y", "-q", "g++"])


def host_triple() -> str:
    out = run(["rustc", "-vV"], capture_output=True).stdout
    return re.search(r"^host: (\S+)$", out, re.M).group(1)  # type: ignore[union-attr]


def build(target_dir: Path) -> Path:
    """The drivers, instrumented; `--target` keeps the flags off build scripts."""
    triple = host_triple()
    env = {**os.environ, "RUSTFLAGS": " ".join(COVERAGE_FLAGS)}
    env["CARGO_TARGET_DIR"] = str(target_dir)
    manifest = FUZZ / "libfuzzer" / "Cargo.toml"
    cmd = ["cargo", "build", "--release", "--manifest-path", str(manifest), "--target", triple]
    run(["nice", "-n", "5", *cmd], env=env)
    return target_dir / triple / "release"


def seed(corpus: Path) -> None:
    """Recorded client requests and the seeds made in code, one directory per target."""
    for t in TARGETS:
        (corpus / t).mkdir(parents=True, exist_ok=True)
    for f in (FUZZ / "corpus" / "request").glob("*"):
        shutil.copy(f, corpus / "request" / f.name)
    # A plain debug build, shared with `cargo test -p kafkalite-fuzz`.
    cmd = ["cargo", "run", "-q", "-p", "kafkalite-fuzz", "--bin", "kafkalite-fuzz-seeds"]
    run(["nice", "-n", "5", *cmd, "--", str(corpus)], cwd=ROOT)


def fuzz_one(binary: Path, corpus: Path, crashes: Path, seconds: int) -> dict[str, object]:
    crashes.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(binary),
        str(corpus),
        f"-max_total_time={seconds}",
        "-print_final_stats=1",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=65536",
        f"-artifact_prefix={crashes}/",
    ]
    started = time.monotonic()
    proc = subprocess.run(cmd, text=True, capture_output=True)
    elapsed = time.monotonic() - started
    log = proc.stdout + proc.stderr
    (crashes.parent / f"{binary.name}.log").write_text(log[-200_000:])
    m = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    execs = int(m[-1]) if m else 0
    cov = re.findall(r"cov: (\d+) ft: (\d+)", log)
    found = sorted(p.name for p in crashes.iterdir())
    return {
        "executions": execs,
        "crashes": len(found),
        "crash_files": found,
        "exit": proc.returncode,
        "coverage_edges": int(cov[-1][0]) if cov else 0,
        "features": int(cov[-1][1]) if cov else 0,
        "seconds": round(elapsed, 1),
        "exec_per_s": round(execs / max(elapsed, 1e-9)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="total, split over targets")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "fuzz")
    parser.add_argument("--save-regressions", action="store_true")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; known: {', '.join(TARGETS)}")
    setup()
    target_dir = ROOT / "target" / "libfuzzer"
    bins = build(target_dir)
    corpus = args.out / "corpus"
    seed(corpus)
    share = max(1, int(args.minutes * 60 / len(targets)))
    results = {}
    for t in targets:
        results[t] = fuzz_one(bins / t, corpus / t, args.out / "crashes" / t, share)
        r = results[t]
        print(
            f"{t:<10} {r['executions']:>12,} executions {r['exec_per_s']:>8,}/s "
            f"{r['crashes']} crashes, {r['coverage_edges']} edges, exit {r['exit']}"
        )
        if args.save_regressions:
            for name in r["crash_files"]:  # type: ignore[union-attr]
                dest = FUZZ / "regressions" / t
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(args.out / "crashes" / t / name, dest / name)
    summary = {
        "executions": sum(r["executions"] for r in results.values()),  # type: ignore[misc]
        "decoder_executions": sum(
            r["executions"]  # type: ignore[misc]
            for t, r in results.items()
            if t in ("request", "records")
        ),
        "crashes": sum(r["crashes"] for r in results.values()),  # type: ignore[misc]
        "targets": results,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    return 1 if summary["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
