"""Helpers shared by the bench scripts: medians and scratch dirs here; fio, iperf3 and the
page-cache warm-up are the benchmark harness's (kafkalite.bench.limits)."""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Sequence
from pathlib import Path

from kafkalite.bench import limits
from kafkalite.bench.limits import warm_page_cache

__all__ = ["fio_seq_write_mb_s", "iperf3_loopback_mb_s", "median", "scratch_dir", "warm_page_cache"]

REPO = Path(__file__).resolve().parent.parent
SCRATCH = REPO / "bench" / "scratch"
MIB = 1 << 20
GIB = 1 << 30


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def scratch_dir(name: str, base: Path | None = None) -> Path:
    path = (base or SCRATCH) / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def fio_seq_write_mb_s(
    directory: Path, size_bytes: int, direct: bool = False, block_bytes: int = MIB
) -> float:
    """fio's sequential write MiB/s into a new file in `directory` (see limits.fio_seq_write)."""
    return limits.fio_seq_write(directory, size_bytes, direct, block_bytes=block_bytes)["mb_s"]


def iperf3_loopback_mb_s(size_bytes: int, zerocopy: bool) -> float:
    """iperf3 sending `size_bytes` over loopback, optionally with -Z (sendfile)."""
    return limits.iperf3(zerocopy=zerocopy, size_bytes=size_bytes)["mb_s"]
