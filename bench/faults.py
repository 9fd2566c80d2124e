"""Single-node fault checker: each fault type injected --count times into a broker daemon
under numbered idempotent acks=all writes (a plain, a compacted and a tiny-retention topic)
and a consumer group committing as it reads; then every record read back and counted
(kafkalite.chaos.single_run). Not a test; prints a table, the last line is JSON.

    python bench/faults.py --count 20 --out bench/results/faults-single-node

Columns: inj = faults injected; acked = writes acknowledged; lost = acknowledged, absent,
and not excused (must be 0); dup, reord, phantom (present but never sent); unacked =
sent, never acknowledged, present (allowed); compacted / retention = absent because the
log removed them on purpose (a later value of the key is there / below the log start);
destroyed = inside a range the fault itself cut off or corrupted; rd-err = read errors
(a corrupt batch must fail the read, never be delivered); back = committed offsets seen
moving backwards; c-lost = acknowledged commits lost.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import scratch_dir

from kafkalite.chaos.fusemount import FuseMount
from kafkalite.chaos.single import SINGLE_FAULTS
from kafkalite.chaos.single_run import run_fault

COLUMNS = [
    ("fault", "fault"),
    ("inj", "injected"),
    ("acked", "acked"),
    ("lost", "lost"),
    ("dup", "duplicated"),
    ("reord", "reordered"),
    ("phantom", "phantom"),
    ("unacked", "unacked_present"),
    ("compacted", "compacted"),
    ("retention", "retention"),
    ("destroyed", "destroyed"),
    ("rd-err", "read_errors"),
    ("back", "offsets_backwards"),
    ("c-lost", "commits_lost"),
]
TMPFS_BYTES = 48 << 20


@contextmanager
def small_fs() -> Iterator[Path | None]:
    """A size-limited tmpfs for the disk-full fault, or None (and why) without root."""
    if os.geteuid() != 0:
        print("disk-full: needs root to mount a small tmpfs; not run", file=sys.stderr)
        yield None
        return
    mnt = Path(tempfile.mkdtemp(prefix="kafkalite-full-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"disk-full: cannot mount tmpfs: {done.stderr.strip()}; not run", file=sys.stderr)
        yield None
        return
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


def table(rows: list[dict[str, Any]]) -> str:
    head = [c for c, _ in COLUMNS]
    body = [[str(r.get(k, "")) for _, k in COLUMNS] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for b in body:
        lines.append("| " + " | ".join(x.rjust(w) for x, w in zip(b, widths, strict=True)) + " |")
    return "\n".join(lines)


# name -> (fault or faults in turn, broker overrides, where the log dir lives)
VARIANTS: dict[str, tuple[str | list[str], dict[str, object], str]] = {
    **{f: (f, {}, "disk") for f in SINGLE_FAULTS if f not in ("disk-full", "eio", "power-loss")},
    "disk-full": ("disk-full", {}, "tmpfs"),
    "eio": ("eio", {}, "fuse"),
    "power-loss": ("power-loss", {}, "fuse"),
    "power-loss flush.messages=1": ("power-loss", {"log.flush.interval.messages": 1}, "fuse"),
    "power-loss flush.ms=100": ("power-loss", {"log.flush.interval.ms": 100}, "fuse"),
    "corrupt-closed+sigkill": (["corrupt-closed", "sigkill"], {}, "disk"),
}
# Variants whose losses are the guarantee itself, not a defect (see the results README).
DOCUMENTED = {
    "power-loss": "no fsync before the ack (Kafka's default): unsynced writes and commits "
    "are lost on power failure",
    "power-loss flush.ms=100": "flush.ms is checked on append only: up to flush.ms of "
    "acknowledged writes are lost on power failure",
    "corrupt-closed+sigkill": "recovery after a crash truncates at a corrupt batch above "
    "the recovery point and deletes later segments (Kafka's rule)",
}


def run_one(name: str, args: argparse.Namespace) -> dict[str, Any]:
    fault, overrides, where = VARIANTS[name]
    data = scratch_dir("faults-" + name.replace(" ", "-").replace("=", "-"))
    common = {"rate": args.rate, "seed": args.seed, "overrides": overrides}
    row: dict[str, Any]
    if where == "disk":
        row = run_fault(fault, args.count, data, **common)
    elif where == "tmpfs":
        with small_fs() as fs:
            if fs is None:
                return {"fault": name, "injected": 0, "notes": ["needs root and tmpfs: not run"]}
            row = run_fault(fault, args.count, data, log_dir=fs / "logs", **common)
    else:
        why = FuseMount.available()
        if why is not None:
            return {"fault": name, "injected": 0, "notes": [f"not run: {why}"]}
        with FuseMount(data / "platter", data / "mnt") as mount:
            row = run_fault(fault, args.count, data, log_dir=mount.mountpoint / "logs",
                            mount=mount, **common)  # fmt: skip
    row["fault"] = name
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="faults per type (default 20)")
    parser.add_argument("--rate", type=float, default=150.0, help="writes/s per writer")
    parser.add_argument("--faults", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=None, help="random seed of the nemesis")
    parser.add_argument("--out", type=Path, help="write results.json and table.md here")
    args = parser.parse_args()
    rows = []
    for fault in args.faults.split(","):
        if fault not in VARIANTS:
            raise SystemExit(f"unknown fault {fault!r}; known: {', '.join(VARIANTS)}")
        rows.append(run_one(fault, args))
        print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
        (args.out / "table.md").write_text(table(rows) + "\n")
    keys = ("lost", "duplicated", "reordered", "phantom", "offsets_backwards", "commits_lost")
    bad = [r["fault"] for r in rows if any(r.get(k) for k in keys)]
    bad = [f for f in bad if f not in DOCUMENTED]
    summary = {k: r for r in rows for k in [r["fault"]]}
    print(json.dumps({"faults_single_node": summary, "failed": sorted(set(bad))}))


if __name__ == "__main__":
    main()
