"""What a broker costs while it works, read from /proc for every process of a system (each
broker of a cluster; Kafka's KRaft controller runs inside its broker process): CPU seconds,
resident memory, open file descriptors and threads.

CPU is read as totals before and after a phase; memory, fds and threads are sampled once a
second by a background thread, each sample labelled with the phase it fell in, so the report
can give the peak over the whole run and the steady state of the produce phase.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds so far of `pids` (processes that are gone count 0)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


@dataclass(frozen=True)
class Sample:
    at: float
    phase: str
    rss_bytes: int
    fds: int
    threads: int


def sample(pids: list[int], phase: str) -> Sample | None:
    rss = fds = threads = 0
    seen = False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss += int(f.read().split()[1]) * PAGE_BYTES
            fds += len(os.listdir(f"/proc/{pid}/fd"))
            threads += len(os.listdir(f"/proc/{pid}/task"))
            seen = True
        except OSError:  # the process ended between listing and reading
            continue
    return Sample(time.monotonic(), phase, rss, fds, threads) if seen else None


class ProcessSampler:
    """Samples the processes `pids()` names every `interval_s` until stopped."""

    def __init__(self, pids: Callable[[], list[int]], interval_s: float = 1.0) -> None:
        self._pids = pids
        self._interval = interval_s
        self._phase = "start"
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="broker-sampler", daemon=True)

    def start(self) -> ProcessSampler:
        self._thread.start()
        return self

    def mark(self, phase: str) -> None:
        """Label the samples from now on as `phase`."""
        self._phase = phase
        self._take()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _take(self) -> None:
        if (s := sample(self._pids(), self._phase)) is not None:
            self.samples.append(s)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._take()
            self._stop.wait(self._interval)

    def summary(self, steady_phase: str = "produce") -> dict[str, Any]:
        """Peaks over every sample; steady RSS as the median of `steady_phase`'s samples
        after its first third (once buffers and caches have grown to their working size)."""
        if not self.samples:
            return {}
        steady = [s for s in self.samples if s.phase == steady_phase]
        steady = steady[len(steady) // 3 :] or steady
        out: dict[str, Any] = {
            "peak_rss_mib": round(max(s.rss_bytes for s in self.samples) / MIB, 1),
            "max_fds": max(s.fds for s in self.samples),
            "max_threads": max(s.threads for s in self.samples),
            "samples": len(self.samples),
        }
        if steady:
            out["steady_rss_mib"] = round(statistics.median(s.rss_bytes for s in steady) / MIB, 1)
            out["steady_fds"] = round(statistics.median(s.fds for s in steady))
            out["steady_threads"] = round(statistics.median(s.threads for s in steady))
        return out
