"""Append throughput of the storage core against the disk's own limit, measured side by side.

Appends >= 1 GiB of ~1 MiB record batches (1 KiB records) to a PartitionLog, once per I/O
engine (io_uring and the pwritev fallback, each in its own process since the engine is chosen
per process), and in the same run measures fio's sequential buffered write on the same
filesystem. Neither side fsyncs: Kafka's default is to rely on replication, and fio runs with
end_fsync=0, so both measure the same thing (bytes into the page cache of that filesystem).

The limit is fio writing the same bytes per call as one append (a batch, 1,033,997 bytes):
a batch is not a multiple of the page size, and the kernel copies such writes 5-20% slower
than 1 MiB ones (fio against fio in the same rounds here, e.g. 3481 vs 3696 MiB/s, median
of 5), which is the data's shape, not the log's overhead. fio at 1 MiB per call is
measured in the same rounds and reported too (limit_1mib_mb_per_s, ratio_to_1mib_limit).

Every measured run, of every system, starts right after the same warm-up (write and delete
1.25 GiB on that filesystem): this VM hands freed memory back to the host after a second
or two, and the next first touch of it runs at ~0.3 GiB/s instead of several GiB/s, so a
run's speed otherwise depends on what happened to run before it. Systems alternate run by
run; all are measured in the same regime: fresh files on recently touched memory.

The last stdout line is JSON: mb_per_s, limit_mb_per_s, ratio_to_disk_limit, io_engine, ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import GIB, MIB, fio_seq_write_mb_s, median, scratch_dir, warm_page_cache

RECORD_BYTES = 1024
WARMUP_BYTES = int(1.25 * GIB)
RECORDS_PER_BATCH = 1000
PREALLOCATE_ENV = "KAFKALITE_BENCH_PREALLOCATE"


def make_batch() -> bytearray:
    """One uncompressed batch of RECORDS_PER_BATCH records; its size depends only on the
    record sizes, so every process builds one of the same length."""
    from kafkalite import _core

    records = [(None, os.urandom(RECORD_BYTES))] * RECORDS_PER_BATCH
    return bytearray(_core.build_batch(records))


def append_once(log_dir: str, total_bytes: int) -> dict[str, float | str]:
    """One measured run, in this process (the engine comes from KAFKALITE_IO_ENGINE)."""
    from kafkalite import _core

    batch = make_batch()
    # --preallocate: the fixed 64 MiB block reservation instead of the adaptive one.
    preallocate = os.environ.get(PREALLOCATE_ENV, "false")
    log = _core.PartitionLog(log_dir, {"max.message.bytes": 4 * MIB, "preallocate": preallocate})
    warm_page_cache(Path(log_dir).parent, WARMUP_BYTES)
    count = max(1, total_bytes // len(batch))
    started = time.perf_counter()
    for _ in range(count):
        log.append(batch)
    elapsed = time.perf_counter() - started
    written = log.size_bytes
    log.close()
    return {
        "mb_per_s": written / MIB / elapsed,
        "bytes": written,
        "seconds": elapsed,
        "batch_bytes": len(batch),
        "io_engine": _core.io_engine(),
    }


def run_child(engine: str, log_dir: Path, total_bytes: int) -> dict[str, float | str]:
    env = dict(os.environ)
    env["KAFKALITE_IO_ENGINE"] = engine
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(log_dir), str(total_bytes)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 GiB per run, 5 runs (< 2 min)")
    parser.add_argument("--gib", type=float, default=None, help="GiB appended per run")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (on the data fs)")
    parser.add_argument(
        "--preallocate", action="store_true", help="topic preallocate=true (fixed reservation)"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.preallocate:
        os.environ[PREALLOCATE_ENV] = "true"
    if args.child:
        print(json.dumps(append_once(args.child[0], int(args.child[1]))))
        return

    gib = args.gib or (1.0 if args.quick else 2.0)
    runs = args.runs or (5 if args.quick else 11)
    total = int(gib * GIB)
    work = scratch_dir("append", args.dir)

    batch_bytes = len(make_batch())
    appended = max(1, total // batch_bytes) * batch_bytes
    results: dict[str, list[float]] = {"fio": [], "fio_1mib": [], "io_uring": [], "pwritev": []}
    engine_seen = {}
    for run in range(runs):
        warm_page_cache(work, WARMUP_BYTES)
        results["fio"].append(fio_seq_write_mb_s(work, appended, block_bytes=batch_bytes))
        warm_page_cache(work, WARMUP_BYTES)
        results["fio_1mib"].append(fio_seq_write_mb_s(work, total))
        for engine in ("io_uring", "pwritev"):
            log_dir = scratch_dir(f"append/log-{engine}", args.dir)
            r = run_child(engine, log_dir, total)
            results[engine].append(float(r["mb_per_s"]))
            engine_seen[engine] = r["io_engine"]
            subprocess.run(["rm", "-rf", str(log_dir)], check=True)
        print(
            f"run {run + 1}/{runs}: fio {results['fio'][-1]:.0f} MB/s "
            f"(1 MiB calls: {results['fio_1mib'][-1]:.0f}), "
            f"io_uring {results['io_uring'][-1]:.0f} MB/s, "
            f"pwritev {results['pwritev'][-1]:.0f} MB/s",
            file=sys.stderr,
        )
    limit = median(results["fio"])
    limit_1mib = median(results["fio_1mib"])
    uring = median(results["io_uring"])
    fallback = median(results["pwritev"])
    summary = {
        "mb_per_s": round(uring, 1),
        "limit_mb_per_s": round(limit, 1),
        "ratio_to_disk_limit": round(uring / limit, 3),
        "io_engine": engine_seen["io_uring"],
        "fallback_mb_per_s": round(fallback, 1),
        "fallback_ratio_to_disk_limit": round(fallback / limit, 3),
        "fallback_io_engine": engine_seen["pwritev"],
        "limit_1mib_mb_per_s": round(limit_1mib, 1),
        "ratio_to_1mib_limit": round(uring / limit_1mib, 3),
        "fallback_ratio_to_1mib_limit": round(fallback / limit_1mib, 3),
        "batch_bytes": batch_bytes,
        "gib_per_run": gib,
        "runs": runs,
        "regime": "buffered, no fsync, fresh files, memory touched just before each run",
        "units": "MiB/s, median of runs",
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
