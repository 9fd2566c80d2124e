"""Local-cluster figures: `Cluster(brokers=N)` start time and RSS, and failover time.
Not a test; the last line is JSON.

- Start: from `Cluster(...)` construction until every broker is registered in ZooKeeper
  and a controller is elected (what `start()` waits for), then until a real client's
  Metadata lists every broker; median of --starts fresh clusters.
- RSS: VmRSS of each broker process and of ZooKeeper's JVM, idle after start.
- Failover: --kills times, on one cluster, each on a new 6-partition RF-3 topic: SIGKILL
  the leader of partition 0, time until a surviving broker's Metadata shows a new leader
  for every partition the dead broker led, then restart it (and wait until it is back).
  Bounded below by zookeeper.session.timeout.ms (--session-ms): ZooKeeper only expires
  the dead broker's session then. Median and worst.
- Propagation: from CreateTopics sent to one broker until every broker's Metadata shows
  all the new topic's partitions with leaders (includes the CreateTopics round trip), and
  from the CreateTopics answer until then;
  and for each failover, from the first surviving broker showing the new leaders until
  every surviving broker does (how long a leader change takes to reach all brokers once
  the controller has written it; polled every 20 ms, so resolution ~20-40 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import _core
from kafkalite.cluster import Cluster


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _leaders(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    with _core.KafkaClient(bootstrap, request_timeout_ms=5000) as c:
        t = c.metadata([topic]).topics.get(topic)
        if t is None or t.error_code:
            return {}
        return {p.partition: (p.leader, p.leader_epoch) for p in t.partitions}


def _wait(predicate: Any, timeout: float = 120.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(interval)


def measure_start(n: int, overrides: dict[str, object]) -> dict[str, Any]:
    t0 = time.monotonic()
    c = Cluster(n, overrides=overrides).start()
    started = time.monotonic() - t0
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        _wait(lambda: len(admin.list_topics(timeout=5).brokers) == n)
        ready = time.monotonic() - t0
        time.sleep(1)
        assert c.zookeeper is not None and c.zookeeper._proc is not None
        rss = {
            "brokers_kib": [_rss_kib(b.pid) for b in c.brokers],
            "zookeeper_kib": _rss_kib(c.zookeeper._proc.pid),
        }
    finally:
        c.stop()
    return {"start_s": started, "ready_s": ready, **rss}


def measure_failover(n: int, kills: int, overrides: dict[str, object]) -> dict[str, Any]:
    """Each kill on a new topic: until replication exists (issue 13) a restarted broker
    does not rejoin the ISR (its log lacks what was written meanwhile), so ISRs only
    shrink; a fresh RF-3 topic gives every kill the same full ISR to elect from."""
    times: list[float] = []
    propagation: list[float] = []
    leader_spread: list[float] = []
    after_answer: list[float] = []
    with Cluster(n, overrides=overrides) as c:
        for i in range(kills):
            topic = f"failover-{i}"
            # A new admin client each round: librdkafka drops the handle of a broker that
            # left the metadata, failing a request queued on it.
            admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
            t0 = time.monotonic()
            admin.create_topics([NewTopic(topic, 6, min(3, n))], operation_timeout=30)[
                topic
            ].result(30)
            answered = time.monotonic()
            every = [b.bootstrap_servers for b in c.brokers]
            _wait(lambda t=topic, o=every: all(len(_leaders(b, t)) == 6 for b in o))
            propagation.append(time.monotonic() - t0)
            after_answer.append(time.monotonic() - answered)
            before = _leaders(c.bootstrap_servers, topic)
            victim = before[0][0]
            led = [p for p, (leader, _e) in before.items() if leader == victim]
            survivors = [b.bootstrap_servers for b in c.brokers if b.broker_id != victim]
            killed = time.monotonic()
            c.brokers[victim - 1].kill()

            def moved(
                s: str,
                t: str = topic,
                dead: int = victim,
                led: list[int] = led,
            ) -> bool:
                now = _leaders(s, t)
                return all(p in now and now[p][0] not in (dead, -1) for p in led)

            _wait(lambda ss=survivors: any(moved(s) for s in ss))
            first = time.monotonic()
            times.append(first - killed)
            _wait(lambda ss=survivors: all(moved(s) for s in ss))
            leader_spread.append(time.monotonic() - first)
            c.brokers[victim - 1].restart()
    return {
        "create_to_all_brokers_median_s": statistics.median(propagation),
        "create_to_all_brokers_worst_s": max(propagation),
        "create_answered_to_all_brokers_median_s": statistics.median(after_answer),
        "create_answered_to_all_brokers_worst_s": max(after_answer),
        "failover_s": times,
        "failover_median_s": statistics.median(times),
        "failover_worst_s": max(times),
        "leader_change_to_all_brokers_median_s": statistics.median(leader_spread),
        "leader_change_to_all_brokers_worst_s": max(leader_spread),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--session-ms", type=int, default=6000)
    args = ap.parse_args()
    overrides: dict[str, object] = {"zookeeper.session.timeout.ms": args.session_ms}
    starts = [measure_start(args.brokers, overrides) for _ in range(args.starts)]
    result = {
        "brokers": args.brokers,
        "session_timeout_ms": args.session_ms,
        "start_median_s": statistics.median(s["start_s"] for s in starts),
        "ready_median_s": statistics.median(s["ready_s"] for s in starts),
        "broker_rss_kib": starts[-1]["brokers_kib"],
        "zookeeper_rss_kib": starts[-1]["zookeeper_kib"],
        "total_rss_kib": sum(starts[-1]["brokers_kib"]) + starts[-1]["zookeeper_kib"],
        **measure_failover(args.brokers, args.kills, overrides),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
