"""Cluster faults through the checker: power loss of one broker at a time (its unsynced
writes dropped) and wall-clock steps, each injected --count times into a fresh 3-broker
cluster under numbered idempotent acks=all writes to an RF=3, min.insync.replicas=2 topic
and a consumer group committing as it reads (kafkalite.chaos: faults, schedule,
checker, offsets). Default flush settings: nothing is fsynced before the ack. Not a test;
prints a table, then one JSON line per fault type.

    python bench/cluster_faults.py --count 10 --out bench/results/cluster-faults

Columns: inj = faults injected; acked = writes acknowledged; lost = acknowledged but not
read back (must be 0); dup, reord, phantom (read back, never sent); unacked = sent, never
acknowledged, present (allowed); back = committed offsets seen moving backwards (OffsetFetch
every 100 ms); c-lost = acknowledged commits lost; anomalies = what a fault saw go wrong
without losing data (an ISR that did not drop a stopped follower, a step not seen).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from _common import scratch_dir
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.chaos.checker import Writers
from kafkalite.chaos.disks import BrokerDisks
from kafkalite.chaos.faults import Target
from kafkalite.chaos.offsets import GroupOffsets
from kafkalite.chaos.schedule import Schedule, run
from kafkalite.chaos.wallclock import WallClocks
from kafkalite.cluster import Cluster

COLUMNS = [
    ("fault", "fault"),
    ("inj", "injected"),
    ("acked", "acked"),
    ("lost", "lost"),
    ("dup", "duplicated"),
    ("reord", "reordered"),
    ("phantom", "phantom"),
    ("unacked", "unacked_present"),
    ("back", "offsets_backwards"),
    ("c-lost", "commits_lost"),
    ("anomalies", "anomaly_count"),
    ("s", "seconds"),
]
BROKER_IDS = (1, 2, 3)
TOPIC = "numbered"


def table(rows: list[dict[str, Any]]) -> str:
    head = [c for c, _ in COLUMNS]
    body = [[str(r.get(k, "")) for _, k in COLUMNS] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for b in body:
        lines.append("| " + " | ".join(x.rjust(w) for x, w in zip(b, widths, strict=True)) + " |")
    return "\n".join(lines)


def create_topic(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # Small segments: a segment is fsynced when it rolls, so a power cut leaves a synced
    # prefix and drops the unsynced tail.
    config = {"min.insync.replicas": "2", "segment.bytes": str(16 << 10)}
    new = NewTopic(TOPIC, 1, 3, config=config)
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(30)
    deadline = time.monotonic() + 30
    while not all(
        AdminClient({"bootstrap.servers": b.bootstrap_servers})
        .list_topics(TOPIC, timeout=5)
        .topics[TOPIC]
        .partitions.get(0, None)
        for b in cluster.brokers
    ):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{TOPIC} not on every broker")
        time.sleep(0.2)


def run_one(fault: str, args: argparse.Namespace) -> dict[str, Any]:
    data = scratch_dir("cluster-faults-" + fault)
    # clock-jump stops a follower past the lag time: its session must outlast that, so
    # the ISR drop comes from the leader's lag check.
    session_ms = args.clock_session_ms if fault == "clock-jump" else args.session_ms
    overrides: dict[str, object] = {
        "zookeeper.session.timeout.ms": session_ms,
        "replica.lag.time.max.ms": args.lag_ms,
        "offsets.topic.replication.factor": 3,
    }
    started = time.monotonic()
    with ExitStack() as stack:
        cluster_args: dict[str, Any] = {}
        disks = clocks = None
        if fault == "power-loss":
            why = BrokerDisks.available()
            if why is not None:
                return {"fault": fault, "injected": 0, "notes": [f"not run: {why}"]}
            disks = stack.enter_context(BrokerDisks(data / "disks", BROKER_IDS))
            cluster_args["broker_overrides"] = disks.overrides()
        elif fault == "clock-jump":
            why = WallClocks.available()
            if why is not None:
                return {"fault": fault, "injected": 0, "notes": [f"not run: {why}"]}
            clocks = WallClocks(data / "clocks").build()
            cluster_args["broker_env"] = clocks.env
        cluster = stack.enter_context(
            Cluster(len(BROKER_IDS), overrides=overrides, data_dir=data / "cluster", **cluster_args)
        )
        create_topic(cluster)
        target = Target(cluster, TOPIC, disks=disks, clocks=clocks, rng=random.Random(args.seed))
        writers = Writers(cluster.bootstrap_servers, TOPIC, writers=2, rate=args.rate).start()
        group = GroupOffsets(cluster.bootstrap_servers, TOPIC).start()
        try:
            result = run(target, Schedule(faults=[fault], count=args.count), writers)
        finally:
            offsets = group.stop()
    row: dict[str, Any] = {"fault": fault, "injected": result.faults, **result.as_dict()}
    row.update(
        session_timeout_ms=session_ms,
        replica_lag_time_max_ms=args.lag_ms,
        offsets_backwards=offsets.backwards,
        commits_lost=offsets.commit_lost,
        commits_acked=offsets.commits_acked,
        offset_samples=offsets.samples,
        offsets_examples=offsets.examples,
        anomaly_count=len(target.anomalies),
        anomalies=target.anomalies,
        producers_replaced=result.producers_replaced,
        lost_examples=result.lost_examples,
        write_errors=dict(writers.errors),
        fault_log=result.fault_log,
        seconds=round(time.monotonic() - started),
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10, help="faults per type (default 10)")
    parser.add_argument("--rate", type=float, default=100.0, help="writes/s per writer")
    parser.add_argument("--faults", default="power-loss,clock-jump", help="comma-separated")
    parser.add_argument("--seed", type=int, default=17, help="random seed of the nemesis")
    parser.add_argument("--session-ms", type=int, default=4000)
    parser.add_argument("--clock-session-ms", type=int, default=10000)
    parser.add_argument("--lag-ms", type=int, default=3000)
    parser.add_argument("--out", type=Path, help="write results.json and table.md here")
    args = parser.parse_args()
    rows = []
    for fault in args.faults.split(","):
        if fault not in ("power-loss", "clock-jump"):
            raise SystemExit(f"unknown fault {fault!r}; known: power-loss, clock-jump")
        rows.append(run_one(fault, args))
    print(table(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
        (args.out / "table.md").write_text(table(rows) + "\n")
    for r in rows:
        keys = ("fault", "injected", "acked", "lost", "duplicated", "reordered", "phantom")
        line = {k: r.get(k) for k in keys}
        line.update(offsets_backwards=r.get("offsets_backwards"), anomalies=r.get("anomaly_count"))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
