"""Append throughput of the storage core against the disk's own limit, measured side by side.

Appends >= 1 GiB of ~1 MiB record batches (1 KiB records) to a PartitionLog, once per I/O
engine (io_uring and the pwritev fallback, each in its own process since the engine is chosen
per process), and in the same run measures fio's sequential 1 MiB buffered write on the same
filesystem. Neither side fsyncs: Kafka's default is to rely on replication, and fio runs with
end_fsync=0, so both measure the same thing (bytes into the page cache of that filesystem).

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import GIB, MIB, fio_seq_write_mb_s, median, scratch_dir, warm_page_cache

RECORD_BYTES = 1024
WARMUP_BYTES = int(1.25 * GIB)
RECORDS_PER_BATCH = 1000


def append_once(log_dir: str, total_bytes: int) -> dict[str, float | str]:
    """One measured run, in this process (the engine comes from KAFKALITE_IO_ENGINE)."""
    from kafkalite import _core

    value = os.urandom(RECORD_BYTES)
    records = [(None, value)] * RECORDS_PER_BATCH
    batch = bytearray(_core.build_batch(records))
    log = _core.PartitionLog(log_dir, {"max.message.bytes": 4 * MIB})
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
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(append_once(args.child[0], int(args.child[1]))))
        return

    gib = args.gib or (1.0 if args.quick else 2.0)
    runs = args.runs or (5 if args.quick else 11)
    total = int(gib * GIB)
    work = scratch_dir("append", args.dir)

    results: dict[str, list[float]] = {"fio": [], "io_uring": [], "pwritev": []}
    engine_seen = {}
    for run in range(runs):
        warm_page_cache(work, WARMUP_BYTES)
        results["fio"].append(fio_seq_write_mb_s(work, total))
        for engine in ("io_uring", "pwritev"):
            log_dir = scratch_dir(f"append/log-{engine}", args.dir)
            r = run_child(engine, log_dir, total)
            results[engine].append(float(r["mb_per_s"]))
            engine_seen[engine] = r["io_engine"]
            subprocess.run(["rm", "-rf", str(log_dir)], check=True)
        print(
            f"run {run + 1}/{runs}: fio {results['fio'][-1]:.0f} MB/s, "
            f"io_uring {results['io_uring'][-1]:.0f} MB/s, "
            f"pwritev {results['pwritev'][-1]:.0f} MB/s",
            file=sys.stderr,
        )
    limit = median(results["fio"])
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
        "gib_per_run": gib,
        "runs": runs,
        "regime": "buffered, no fsync, fresh files, memory touched just before each run",
        "units": "MiB/s, median of runs",
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
