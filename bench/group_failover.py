"""How long a consumer group stops when its coordinator's broker is SIGKILLed. Not a test;
the last line is JSON.

Each round on a fresh `Cluster(brokers=3)` (until replication exists, issue 13, a killed
broker's offsets partitions come back with shrunken ISRs, so a round would not start where
the last one did): a group whose coordinator is broker 3 (the leader of its
`__consumer_offsets` partition) consumes a 2-partition topic kept on brokers 1 and 2 with
confluent-kafka, commits, then broker 3 is SIGKILLed and 20 more records are produced.

- resume: from the kill until the group has read every record produced after it and a
  synchronous commit succeeded at its new coordinator (found, rejoined, carrying on);
- first record: from the kill until the first record produced after it arrives (fetching
  from partition leaders need not wait for the coordinator).

Both are bounded below by zookeeper.session.timeout.ms (--session-ms): the controller moves
the dead broker's leaderships once ZooKeeper expires its session. Median and worst.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import _core
from kafkalite.cluster import Cluster
from kafkalite.errors import KafkaliteError


def _wait(predicate: Any, timeout: float = 120.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(interval)


def _coordinator(bootstrap: str, group: str) -> int | None:
    with _core.KafkaClient(bootstrap, request_timeout_ms=5000) as client:
        try:
            return client.find_coordinator(group)[0]
        except KafkaliteError:
            return None  # the offsets topic is being created


def _group_of(bootstrap: str, broker_id: int) -> str:
    for i in range(1000):
        group = f"bench-{i}"
        if _wait(lambda g=group: _coordinator(bootstrap, g), 30) == broker_id:
            return group
    raise RuntimeError(f"no group coordinated by broker {broker_id}")


def one_round(session_ms: int) -> tuple[float, float]:
    with Cluster(3, overrides={"zookeeper.session.timeout.ms": session_ms}) as c:
        victim = c.brokers[2]
        survivors = ",".join(b.bootstrap_servers for b in c.brokers[:2])
        group = _group_of(c.brokers[0].bootstrap_servers, victim.broker_id)
        admin = AdminClient({"bootstrap.servers": survivors})
        new = NewTopic("events", num_partitions=2, replica_assignment=[[1, 2], [2, 1]])
        admin.create_topics([new], operation_timeout=30)["events"].result(30)
        producer = Producer({"bootstrap.servers": survivors, "linger.ms": 0})

        def produce(prefix: str) -> set[bytes]:
            values = [f"{prefix}-{i}".encode() for i in range(20)]
            for i, v in enumerate(values):
                producer.produce("events", v, partition=i % 2)
            assert producer.flush(30) == 0
            return set(values)

        before = produce("before")
        consumer = Consumer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
            }
        )
        consumer.subscribe(["events"])
        seen: set[bytes] = set()

        def poll() -> None:
            for m in consumer.consume(100, 0.1):
                if m.error() is None:
                    seen.add(m.value())

        try:
            _wait(lambda: poll() or before <= seen, 60)
            consumer.commit(asynchronous=False)
            victim.kill()
            killed = time.monotonic()
            after = produce("after")
            first = _wait(lambda: poll() or (seen & after and time.monotonic()), 60) - killed

            def committed() -> bool:
                poll()
                if not after <= seen:
                    return False
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException:
                    return False
                return True

            _wait(committed, 60)
            resumed = time.monotonic() - killed
        finally:
            consumer.close()
    return resumed, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--session-ms", type=int, default=6000)
    args = ap.parse_args()
    rounds = [one_round(args.session_ms) for _ in range(args.rounds)]
    resumed = [r for r, _ in rounds]
    first = [f for _, f in rounds]
    print(
        json.dumps(
            {
                "session_timeout_ms": args.session_ms,
                "resume_s": resumed,
                "resume_median_s": statistics.median(resumed),
                "resume_worst_s": max(resumed),
                "first_record_median_s": statistics.median(first),
                "first_record_worst_s": max(first),
            }
        )
    )


if __name__ == "__main__":
    main()
