"""A checked run of one single-node fault type: a broker daemon, numbered writes
(idempotent, acks=all) into three topics -- plain, compacted, and with a tiny retention --
a consumer group committing as it reads, the fault injected ``count`` times, then
everything read back and judged with the checker's rules (``checker.analyse``).

Segments are small and roll by size and by time, the cleaner runs every 100 ms and
retention checks every 200 ms, so a SIGKILL at a random moment often lands in a roll, a
compaction swap or a retention deletion (the files such a kill leaves are counted).

Losses the rules allow, counted apart and never hidden in ``lost``:
- compacted: a write on the compacted topic with a later write of the same key read back;
- retention: a write whose offset is below its partition's log start offset;
- destroyed: a write in a range the fault itself cut off (torn tail) or corrupted (its
  batch no longer matches its CRC; the read must fail there, which is counted in
  ``read_errors``, never deliver it).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.chaos.checker import Read, Writers, analyse, read_all
from kafkalite.chaos.fusemount import FuseMount
from kafkalite.chaos.node import Node
from kafkalite.chaos.offsets import GroupOffsets
from kafkalite.chaos.single import SINGLE_FAULTS, Target

PARTITIONS = 2
TOPICS: dict[str, dict[str, str]] = {
    "numbered": {"segment.bytes": str(64 << 10), "segment.ms": "2000"},
    "compacted": {
        "cleanup.policy": "compact",
        "segment.bytes": str(32 << 10),
        "segment.ms": "1000",
        "min.cleanable.dirty.ratio": "0.01",
    },
    "retained": {
        "segment.bytes": str(16 << 10),
        "segment.ms": "1000",
        "retention.bytes": str(48 << 10),
    },
}
BROKER = {
    "log.cleaner.backoff.ms": 100,
    "log.retention.check.interval.ms": 200,
    "log.segment.delete.delay.ms": 0,
}
PROGRESS_ACKS = 20


@dataclass
class TopicResult:
    acked: int = 0
    read: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    phantom: int = 0
    unacked_present: int = 0
    compacted: int = 0
    retention: int = 0
    destroyed: int = 0
    read_errors: int = 0
    lost_examples: list[Any] = field(default_factory=list)


def judge(
    writers: Writers,
    records: list[Read],
    compacted: bool = False,
    log_start: dict[int, int] | None = None,
    destroyed: set[tuple[str, int]] | None = None,
) -> TopicResult:
    acked = writers.acked
    r = analyse(acked, records, writers.sent, writers.failed)
    out = TopicResult(
        acked=r.acked,
        read=r.read,
        duplicated=r.duplicated,
        reordered=r.reordered,
        unacked_present=r.unacked_present,
    )
    sent = writers.sent_by_writer
    out.phantom = sum(1 for _p, _o, w, s in records if s >= sent.get(w, 0))
    out.unacked_present -= out.phantom
    top: dict[str, int] = {}
    for _p, _o, w, s in records:
        top[w] = max(top.get(w, -1), s)
    where = writers.acked_offsets
    present = {(w, s) for _p, _o, w, s in records}
    for w, s in sorted(acked - present):
        p, o = where[(w, s)]
        if compacted and top.get(w, -1) > s:
            out.compacted += 1
        elif log_start is not None and o < log_start.get(p, 0):
            out.retention += 1
        elif (w, s) in (destroyed or set()):
            out.destroyed += 1
        else:
            out.lost += 1
            if len(out.lost_examples) < 5:
                out.lost_examples.append((w, s, p, o))
    return out


def _in_ranges(writers: Writers, ranges: dict[int, list[tuple[int, int]]]) -> set[tuple[str, int]]:
    """The acknowledged writes (so far) whose offsets a fault destroyed. Taken right after
    each fault, before new writes can be given offsets the cut made free again."""
    return {
        ws
        for ws, (p, o) in writers.acked_offsets.items()
        if any(a <= o <= b for a, b in ranges.get(p, ()))
    }


def _log_starts(bootstrap: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return {
            p: int(c.get_watermark_offsets(TopicPartition(topic, p), 10)[0])
            for p in range(PARTITIONS)
        }
    finally:
        c.close()


def run_fault(
    fault: str | Sequence[str],
    count: int,
    data_dir: Path,
    log_dir: Path | None = None,
    rate: float = 150.0,
    settle_s: float = 1.0,
    seed: int | None = None,
    say: Callable[[str], None] = print,
    overrides: Mapping[str, object] | None = None,
    mount: FuseMount | None = None,
) -> dict[str, Any]:
    """Inject ``fault`` ``count`` times into a new broker (a list of faults: in turn);
    the row of the report. With ``mount`` (mounted), the log dir is ``log_dir`` on it."""
    schedule = [fault] if isinstance(fault, str) else list(fault)
    unknown = [f for f in schedule if f not in SINGLE_FAULTS]
    if unknown or not schedule:
        known = ", ".join(SINGLE_FAULTS)
        raise ValueError(f"unknown fault {unknown[:1] or '(none)'}; known: {known}")
    node = Node(data_dir, {**BROKER, **(overrides or {})}, log_dir=log_dir)
    node.start()
    t = Target(node, "numbered", rng=random.Random(seed), mount=mount)
    bs = node.bootstrap_servers
    log: list[str] = []
    try:
        admin = AdminClient({"bootstrap.servers": bs})
        new = [NewTopic(n, PARTITIONS, 1, config=c) for n, c in TOPICS.items()]
        for f in admin.create_topics(new).values():
            f.result(30)
        writers = {n: Writers(bs, n, writers=2, rate=rate) for n in TOPICS}
        for w in writers.values():
            w.start()
        group = GroupOffsets(bs, "numbered").start()
        started = time.monotonic()
        for w in writers.values():
            w.wait_acked(PROGRESS_ACKS)
        injected = 0
        destroyed: set[tuple[str, int]] = set()
        try:
            while injected < count:
                name = schedule[injected % len(schedule)]
                what = SINGLE_FAULTS[name](t)
                destroyed |= _in_ranges(writers["numbered"], {**t.torn, **t.damaged})
                injected += 1
                log.append(what)
                say(f"{name} {injected}/{count}: {what}")
                target = writers["numbered"].acked_count + PROGRESS_ACKS
                deadline = time.monotonic() + 30
                while writers["numbered"].acked_count < target and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(settle_s)
        finally:
            node.resume()
            for w in writers.values():
                w.stop()
        offsets = group.stop()
        seconds = time.monotonic() - started
        topics: dict[str, TopicResult] = {}
        error_names: Counter[str] = Counter()
        for name, w in writers.items():
            errors: list[tuple[int, int, str]] = []
            damaged = t.damaged if name == "numbered" else None
            records = read_all(bs, name, timeout=120, damaged=damaged, errors=errors)
            res = judge(
                w,
                records,
                compacted=name == "compacted",
                log_start=_log_starts(bs, name) if name == "retained" else None,
                destroyed=destroyed if name == "numbered" else None,
            )
            res.read_errors = len(errors)
            error_names.update(e[2] for e in errors)
            topics[name] = res
    finally:
        node.stop()
    counted = [k for k in TopicResult().__dict__ if k != "lost_examples"]
    total = {k: sum(getattr(r, k) for r in topics.values()) for k in counted}
    return {
        "fault": "+".join(schedule),
        "overrides": dict(overrides or {}),
        "injected": injected,
        "seconds": round(seconds, 1),
        **total,
        "offsets_backwards": offsets.backwards,
        "commits_lost": offsets.commit_lost,
        "commits_acked": offsets.commits_acked,
        "offset_samples": offsets.samples,
        "interrupted_ops": dict(t.interrupted),
        "killed_on": dict(t.ops_hit),
        "broker_starts": node.starts,
        "lost_examples": [e for r in topics.values() for e in r.lost_examples][:5],
        "offsets_examples": offsets.examples[:5],
        "by_topic": {n: {k: v for k, v in r.__dict__.items()} for n, r in topics.items()},
        "read_error_names": dict(error_names),
        "writer_errors": {n: dict(w.errors) for n, w in writers.items() if w.errors},
        "producers_replaced": sum(w.fatal for w in writers.values()),
        "operator_skips": t.operator_skips,
        "notes": t.notes,
        "fault_log": log,
    }
