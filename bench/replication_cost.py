"""The cost of replication on a local `Cluster(brokers=3)`: acks=all produce throughput
to an RF=3 topic against an RF=1 topic (same clients, same machine), and how long a
follower stopped past `replica.lag.time.max.ms` takes to rejoin the ISR once it runs
again. Not a test; the last line is JSON.

- Throughput: --records records of --size bytes, acks=all, idempotent confluent-kafka
  producer (linger 5 ms), to a fresh 4-partition topic per run; records/s from the first
  produce() until flush() returns. Median of --runs runs per replication factor.
- Rejoin: SIGSTOP one follower of a 1-partition RF=3 topic, wait until the leader has
  dropped it from the ISR (written to ZooKeeper), write some records, SIGCONT; time until
  the ISR znode lists all three again. Median of --runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.cluster import Cluster
from kafkalite.controller import znodes


def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # A single replica can never satisfy the cluster's min.insync.replicas=2.
    configs = {"min.insync.replicas": "1"} if rf == 1 else {}
    new = NewTopic(topic, partitions, rf, config=configs)
    admin.create_topics([new], operation_timeout=30)[topic].result(30)


def _state(c: Cluster, topic: str) -> znodes.LeaderAndIsr:
    data, _ = c.zk.get(znodes.partition_state_path(topic, 0))
    return znodes.parse_state(data)


def _wait(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)


def produce_rate(c: Cluster, topic: str, records: int, size: int) -> float:
    p = Producer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 60000,
        }
    )
    # Connections and metadata first, outside the timed part.
    p.produce(topic, b"warm-up")
    p.flush(30)
    value = b"x" * size
    failed: list[object] = []
    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value, on_delivery=lambda e, _m: e and failed.append(e))
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120) != 0 or failed:
        raise RuntimeError(f"undelivered records: {failed[:3]}")
    return records / (time.monotonic() - started)


def rejoin_seconds(c: Cluster, topic: str, lag_ms: int) -> float:
    state = _state(c, topic)
    follower = next(b for b in c.brokers if b.broker_id != state.leader)
    follower.pause()
    try:
        _wait(lambda: follower.broker_id not in _state(c, topic).isr)
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
        for i in range(1000):
            p.produce(topic, f"while-stopped-{i}".encode())
        p.flush(30)
    finally:
        follower.resume()
    resumed = time.monotonic()
    _wait(lambda: len(_state(c, topic).isr) == 3)
    return time.monotonic() - resumed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lag-ms", type=int, default=2000)
    args = ap.parse_args()
    overrides = {
        "zookeeper.session.timeout.ms": 6000,
        "replica.lag.time.max.ms": args.lag_ms,
        "min.insync.replicas": 2,
    }
    rates: dict[int, list[float]] = {1: [], 3: []}
    rejoin: list[float] = []
    with Cluster(brokers=3, overrides=overrides) as c:
        for run in range(args.runs):
            for rf in (1, 3):
                topic = f"cost-rf{rf}-{run}"
                _create(c.bootstrap_servers, topic, 4, rf)
                time.sleep(1.0)
                rate = produce_rate(c, topic, args.records, args.size)
                rates[rf].append(rate)
                print(f"run {run} rf={rf}: {rate:,.0f} records/s", flush=True)
        for run in range(args.runs):
            topic = f"rejoin-{run}"
            _create(c.bootstrap_servers, topic, 1, 3)
            _wait(lambda t=topic: len(_state(c, t).isr) == 3)
            s = rejoin_seconds(c, topic, args.lag_ms)
            rejoin.append(s)
            print(f"run {run}: follower back in the ISR {s:.2f} s after SIGCONT", flush=True)
    rf1, rf3 = statistics.median(rates[1]), statistics.median(rates[3])
    print(
        json.dumps(
            {
                "records": args.records,
                "record_bytes": args.size,
                "acks": "all",
                "rf1_records_per_s": round(rf1),
                "rf3_records_per_s": round(rf3),
                "rf1_mib_per_s": round(rf1 * args.size / 2**20, 1),
                "rf3_mib_per_s": round(rf3 * args.size / 2**20, 1),
                "rf3_vs_rf1": round(rf3 / rf1, 3),
                "rejoin_s_median": round(statistics.median(rejoin), 2),
                "rejoin_s_max": round(max(rejoin), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
