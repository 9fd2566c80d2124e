"""A fault schedule: inject faults in turn while writers run, letting the cluster recover
between them, then check what survived.

Recovery between faults = every broker registered again, the partition led by a live
broker with its whole replica set back in sync (bounded, since a log without replication
never gets there), and writes acknowledged again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafkalite.chaos.checker import CheckResult, Writers, check
from kafkalite.chaos.faults import FAULTS, Target
from kafkalite.controller import znodes

RECOVER_TIMEOUT_S = 5.0
PROGRESS_ACKS = 20  # acknowledgements that prove writes flow again


@dataclass
class Schedule:
    faults: Sequence[str]
    count: int = 20
    settle_s: float = 0.2
    recover_timeout_s: float = RECOVER_TIMEOUT_S
    log: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = [f for f in self.faults if f not in FAULTS]
        if unknown or not self.faults:
            raise ValueError(f"unknown fault {unknown[:1] or '(none)'}; known: {', '.join(FAULTS)}")


def recover(t: Target, writers: Writers | None, timeout: float, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + timeout
    for b in t.cluster.brokers:
        if not b.running:
            b.restart()
    while any(
        t.cluster.zk.exists(znodes.broker_path(b.broker_id)) is None for b in t.cluster.brokers
    ):
        if time.monotonic() > deadline:
            say("not every broker registered again in time")
            break
        time.sleep(0.1)
    t.leader(timeout=max(1.0, deadline - time.monotonic()))
    replicas = set(t.replicas())
    while (st := t.state()) is None or set(st[1]) != replicas:
        if time.monotonic() > deadline:
            say(f"ISR {st[1] if st else None} not back to {sorted(replicas)} in time")
            break
        time.sleep(0.1)
    if writers is not None:
        # A budget of its own: a replica set that never fills up must not hide whether
        # writes flow again.
        deadline = time.monotonic() + timeout
        target = writers.acked_count + PROGRESS_ACKS
        while writers.acked_count < target:
            if time.monotonic() > deadline:
                say(f"writes not acknowledged again in time; errors {dict(writers.errors)}")
                break
            time.sleep(0.05)


def run(
    t: Target,
    schedule: Schedule,
    writers: Writers,
    say: Callable[[str], None] = print,
    read_timeout: float = 60.0,
) -> CheckResult:
    """Writers already started: inject ``schedule.count`` faults round robin, stop the
    writers, read back and count."""

    def note(line: str) -> None:
        schedule.log.append(line)
        say(line)

    injected = 0
    try:
        writers.wait_acked(PROGRESS_ACKS)
        while injected < schedule.count:
            name = schedule.faults[injected % len(schedule.faults)]
            started = time.monotonic()
            errors_before = writers.errors
            what = FAULTS[name](t)
            injected += 1
            note(f"fault {injected}: {what} ({time.monotonic() - started:.1f} s)")
            recover(t, writers, schedule.recover_timeout_s, note)
            time.sleep(schedule.settle_s)
            # The writers' errors this fault brought, to tell which fault caused which.
            new_errors = writers.errors - errors_before
            if new_errors:
                note(f"  write errors after fault {injected}: {dict(new_errors)}")
    finally:
        if t.netcut is not None:
            t.netcut.restore()
        for b in t.cluster.brokers:
            b.resume()  # never leave a broker stopped behind
        writers.stop()
    recover(t, None, schedule.recover_timeout_s, note)
    result = check(writers, t.cluster.bootstrap_servers, t.topic, read_timeout)
    result.faults = injected
    result.fault_log = list(schedule.log)
    return result
