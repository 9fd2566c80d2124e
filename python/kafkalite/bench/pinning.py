"""Broker on one core, clients on the others: on a small machine clients and broker otherwise
fight for the same cores, and the figures measure the scheduler as much as the broker.

Affinity is set with sched_setaffinity (what `taskset` does), on every thread of the broker
once it is up; threads it starts later inherit their creator's mask. Client processes get
theirs before they exec.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuSplit:
    broker: frozenset[int]
    clients: frozenset[int]

    def describe(self) -> str:
        return f"broker on CPU {sorted(self.broker)}, clients on CPU {sorted(self.clients)}"


def split() -> CpuSplit | None:
    """The lowest usable CPU for the broker and the rest for clients; None with one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return CpuSplit(frozenset(cpus[:1]), frozenset(cpus[1:]))


def pin_process(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of `pid` onto `cpus` (threads that end meanwhile are skipped)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, FileNotFoundError):
            continue


def preexec(cpus: frozenset[int] | None) -> Callable[[], None] | None:
    """A Popen `preexec_fn` putting the child on `cpus` (None: leave it alone)."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)
