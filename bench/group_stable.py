"""Time for a consumer group of three confluent-kafka (librdkafka) consumers to become stable
on an embedded broker. Not a test; the last line is JSON.

Each consumer runs in its own process and subscribes to a 6-partition topic at the same
moment (they wait on a shared start time). "Stable" is the first moment the three hold
disjoint, non-empty assignments covering all six partitions; the figure is that moment
minus the start time (process and library start-up excluded), median of --runs, each run
on a new broker and group.

It is measured with the broker's `group.initial.rebalance.delay.ms` at 0 and at Kafka's
default 3000 (the coordinator then waits that long for more members before the first
generation), and with librdkafka's default `heartbeat.interval.ms` (3000: a member that
joined early learns of the next rebalance at its next heartbeat) and with 500.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker

PARTITIONS = 6
MEMBERS = 3
DEADLINE_S = 120

MEMBER = """
import json, sys, time
from confluent_kafka import Consumer
bootstrap, group, start_at, heartbeat_ms = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
if heartbeat_ms != "default":
    conf["heartbeat.interval.ms"] = int(heartbeat_ms)
c = Consumer(conf)
def on_assign(_c, parts):
    print(json.dumps([time.monotonic(), sorted(p.partition for p in parts)]), flush=True)
def on_revoke(_c, _parts):
    print(json.dumps([time.monotonic(), []]), flush=True)
while time.monotonic() < start_at:
    time.sleep(0.001)
c.subscribe(["stable"], on_assign=on_assign, on_revoke=on_revoke)
try:
    while True:
        c.poll(0.05)
        if sys.stdin.closed:
            break
except KeyboardInterrupt:
    pass
finally:
    c.close()
"""


def one_run(initial_delay_ms: int, heartbeat_ms: str, run: int) -> float:
    config = {"group.initial.rebalance.delay.ms": initial_delay_ms}
    with Broker(config=config) as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("stable", PARTITIONS, 1)])["stable"].result(10)
        start_at = time.monotonic() + 2.0  # after every process has started
        group = f"trio-{run}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", MEMBER, bs, group, str(start_at), heartbeat_ms],
                stdout=subprocess.PIPE,
                stdin=subprocess.PIPE,
                text=True,
            )
            for _ in range(MEMBERS)
        ]
        try:
            return time_to_stable(procs) - start_at
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)


def time_to_stable(procs: list[subprocess.Popen[str]]) -> float:
    """Read the members' assignment events until they split the partitions."""
    import selectors

    current: list[set[int]] = [set() for _ in procs]
    sel = selectors.DefaultSelector()
    for i, p in enumerate(procs):
        assert p.stdout is not None
        sel.register(p.stdout, selectors.EVENT_READ, i)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            line = key.fileobj.readline()  # type: ignore[union-attr]
            if not line:
                continue
            at, parts = json.loads(line)
            current[key.data] = set(parts)
            if (
                all(current)
                and sum(map(len, current)) == PARTITIONS
                and set().union(*current) == set(range(PARTITIONS))
            ):
                return float(at)
    raise SystemExit("the group did not become stable in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for delay in (0, 3000):
        for heartbeat in ("default", "500"):
            times = [one_run(delay, heartbeat, r) for r in range(args.runs)]
            key = f"initial_delay_{delay}ms_heartbeat_{heartbeat}"
            results[key] = round(statistics.median(times), 3)
            print(
                f"group.initial.rebalance.delay.ms={delay:<5} heartbeat.interval.ms={heartbeat:<8}"
                f" stable after {statistics.median(times):.2f} s (runs: "
                + ", ".join(f"{t:.2f}" for t in times)
                + ")",
                flush=True,
            )
    print(json.dumps({"group_of_3_stable_s": results}))


if __name__ == "__main__":
    main()
