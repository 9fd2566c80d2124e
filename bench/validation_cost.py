"""What walking every record of a produced batch costs, before vs after, in the same run.

Since the record walk (poison pills, decompression bombs) every produced batch is read
record by record in the append's verify step, after its CRC; compressed batches are inflated
as a stream. This runs the core's `validation_cost` example (release build), which measures
for uncompressed 1 KiB and 100 B records and zstd 1 KiB records, alternating round by round:
validation alone and the segment append path (page cache, no fsync), each "before" (header
checks + CRC, what appends ran until then) and "after" (+ the record walk).

Each printed line is JSON: MiB/s of batch bytes and of record bytes, medians, and the CPU
seconds per GiB of records the walk adds. `--quick`: 0.25 GiB per run, 3 rounds (< 1 min
once built).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import scratch_dir

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--gib", type=float, default=None, help="GiB of records per run")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (on the data fs)")
    args = parser.parse_args()
    gib = args.gib or (0.25 if args.quick else 1.0)
    runs = args.runs or (3 if args.quick else 5)
    work = scratch_dir("validation_cost", args.dir)
    cmd = ["cargo", "run", "--release", "-q", "-p", "kafkalite-core"]
    cmd += ["--example", "validation_cost", "--", str(gib), str(runs), str(work)]
    out = subprocess.run(
        cmd, cwd=ROOT, check=True, capture_output=True, text=True, env=dict(os.environ)
    ).stdout
    for line in out.strip().splitlines():
        r = json.loads(line)
        print(
            f"{r['workload']}: validation {r['validate_before_mib_s']} -> "
            f"{r['validate_after_mib_s']} MiB/s, append {r['append_before_mib_s']} -> "
            f"{r['append_after_mib_s']} MiB/s, walk {r['walk_cpu_s_per_gib_of_records']} s/GiB",
            file=sys.stderr,
        )
        print(line)


if __name__ == "__main__":
    main()
