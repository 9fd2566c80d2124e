"""A consumer-group member in its own process, for the group tests.

Run as ``python worker.py --client confluent|kafka-python --bootstrap B --topic T --group G``
(``--protocol consumer``: confluent-kafka with KIP-848's ``group.protocol=consumer``).
It prints one JSON object per line on stdout and flushes each:

- ``{"ev": "assigned", "partitions": [...], "t": ...}``: its whole assignment after a change;
- ``{"ev": "msg", "p": partition, "o": offset, "v": value}``: a record it consumed;
- ``{"ev": "committed", "offsets": {partition: offset}}``: after a synchronous commit;
- ``{"ev": "closed"}``: after a clean close (SIGTERM, or ``--max`` records consumed).

With ``--max N`` it stops after N records, commits synchronously and closes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from typing import Any

stop = False


def emit(**event: Any) -> None:
    event["t"] = time.monotonic()
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def on_sigterm(_signum: int, _frame: object) -> None:
    global stop
    stop = True


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    cooperative = args.assignor == "cooperative-sticky"
    owned: set[int] = set()
    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": args.max is None,
        "client.id": f"worker-{args.client}",
    }
    if args.protocol == "consumer":
        # KIP-848: the coordinator assigns and times sessions; the client keeps none of it.
        conf["group.protocol"] = "consumer"
        cooperative = True
    else:
        conf["session.timeout.ms"] = args.session_ms
        conf["heartbeat.interval.ms"] = args.heartbeat_ms
        conf["partition.assignment.strategy"] = args.assignor
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    consumer = Consumer(conf)

    def on_assign(c: Any, partitions: list[Any]) -> None:
        if cooperative:
            owned.update(p.partition for p in partitions)
        else:
            owned.clear()
            owned.update(p.partition for p in partitions)
        emit(ev="assigned", partitions=sorted(owned))

    def on_revoke(c: Any, partitions: list[Any]) -> None:
        if args.protocol == "consumer" and args.max is None and partitions:
            # What was consumed is committed before the revocation is acknowledged, as the
            # Java worker does. librdkafka's own commit on revoke is asynchronous: reaching
            # the coordinator after the heartbeat that acknowledges the revocation, it
            # carries a stale member epoch and is refused (as Kafka refuses it), and the
            # next owner starts from the last periodic commit.
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:
                if e.args[0].code() != KafkaError._NO_OFFSET:
                    emit(ev="error", error=f"commit on revoke: {e}")
        if cooperative:
            owned.difference_update(p.partition for p in partitions)
        else:
            owned.clear()
        emit(ev="assigned", partitions=sorted(owned))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    seen = 0
    while not stop and (args.max is None or seen < args.max):
        msg = consumer.poll(0.1)
        if msg is None:
            continue
        if msg.error():
            emit(ev="error", error=str(msg.error()))
            continue
        emit(ev="msg", p=msg.partition(), o=msg.offset(), v=(msg.value() or b"").decode())
        seen += 1
    if args.max is not None:
        committed = consumer.commit(asynchronous=False) or []
        emit(ev="committed", offsets={str(tp.partition): tp.offset for tp in committed})
    consumer.close()
    emit(ev="closed")


def run_kafka_python(args: argparse.Namespace) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=f"worker-{args.client}",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        auto_offset_reset="earliest",
        enable_auto_commit=args.max is None,
        partition_assignment_strategy=[assignor[args.assignor]],
        group_instance_id=args.instance_id or None,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit(ev="assigned", partitions=[])

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit(ev="assigned", partitions=sorted(tp.partition for tp in assigned))

    # kafka-python 3.0.12: a JoinGroup still in flight when poll() times out may never be
    # finished by the client (it stops heartbeating and its session expires), so poll with a
    # timeout longer than a rebalance takes here; and load the topic's metadata first, so a
    # leader's first assignment is not empty.
    consumer.partitions_for_topic(args.topic)
    consumer.subscribe([args.topic], listener=Listener())
    seen = 0
    while not stop and (args.max is None or seen < args.max):
        batches = consumer.poll(timeout_ms=1000, max_records=1 if args.max else 500)
        for records in batches.values():
            for r in records:
                emit(ev="msg", p=r.partition, o=r.offset, v=r.value.decode())
                seen += 1
    if args.max is not None:
        consumer.commit()
        offsets = {
            str(tp.partition): consumer.committed(tp)
            for tp in consumer.assignment()
            if consumer.committed(tp) is not None
        }
        emit(ev="committed", offsets=offsets)
    consumer.close()
    emit(ev="closed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--instance-id")
    parser.add_argument("--max", type=int)
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    args = parser.parse_args()
    if os.environ.get("KAFKALITE_WORKER_LOG"):
        # Debugging aid: client logs of each worker in <dir>/worker-<pid>.log.
        logging.basicConfig(
            filename=f"{os.environ['KAFKALITE_WORKER_LOG']}/worker-{os.getpid()}.log",
            level=logging.INFO,
            format="%(relativeCreated)d %(name)s %(message)s",
        )
        logging.getLogger("kafka.coordinator").setLevel(logging.DEBUG)
    signal.signal(signal.SIGTERM, on_sigterm)
    if args.client == "confluent":
        run_confluent(args)
    else:
        run_kafka_python(args)


if __name__ == "__main__":
    main()
