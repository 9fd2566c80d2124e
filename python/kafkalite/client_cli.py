"""The client verbs of the ``kafkalite`` command: topic admin, produce, consume. They talk
to a broker over the wire like any Kafka client (librdkafka through confluent-kafka)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _admin(args: argparse.Namespace) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": args.bootstrap_server})


def _fail(message: str) -> int:
    print(f"kafkalite: {message}", file=sys.stderr)
    return 1


def topic_create(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import NewTopic

    configs = dict(item.split("=", 1) for item in args.config)
    # The client must outlive its futures: librdkafka cancels them when it is destroyed.
    admin = _admin(args)
    future = admin.create_topics(
        [NewTopic(args.topic, args.partitions, args.replication_factor, config=configs)]
    )[args.topic]
    try:
        future.result(args.timeout)
    except Exception as e:
        return _fail(f"cannot create topic {args.topic}: {e}")
    print(f"Created topic {args.topic}.")
    return 0


def topic_list(args: argparse.Namespace) -> int:
    metadata = _admin(args).list_topics(timeout=args.timeout)
    for name in sorted(metadata.topics):
        print(name)
    return 0


def topic_describe(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import ConfigResource

    admin = _admin(args)
    topic = admin.list_topics(args.topic, timeout=args.timeout).topics.get(args.topic)
    if topic is None or topic.error is not None:
        return _fail(f"unknown topic {args.topic}: {topic.error if topic else 'not found'}")
    resource = ConfigResource("topic", args.topic)
    configs = admin.describe_configs([resource])[resource].result(args.timeout)
    overrides = {k: v.value for k, v in configs.items() if not v.is_default}
    settings = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
    print(f"Topic: {args.topic}\tPartitionCount: {len(topic.partitions)}\tConfigs: {settings}")
    for pid, p in sorted(topic.partitions.items()):
        print(
            f"\tTopic: {args.topic}\tPartition: {pid}\tLeader: {p.leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isrs))}"
        )
    return 0


def topic_delete(args: argparse.Namespace) -> int:
    admin = _admin(args)
    try:
        admin.delete_topics([args.topic])[args.topic].result(args.timeout)
    except Exception as e:
        return _fail(f"cannot delete topic {args.topic}: {e}")
    print(f"Deleted topic {args.topic}.")
    return 0


def produce(args: argparse.Namespace) -> int:
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "acks": args.acks,
            "compression.type": args.compression,
            "linger.ms": 5,
        }
    )

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    count = 0
    for line in sys.stdin:
        line = line.rstrip("\n")
        key: bytes | None = None
        value = line.encode()
        if args.key_separator and args.key_separator in line:
            k, v = line.split(args.key_separator, 1)
            key, value = k.encode(), v.encode()
        producer.produce(args.topic, value=value, key=key, on_delivery=on_delivery)
        producer.poll(0)
        count += 1
    remaining = producer.flush(args.timeout)
    if remaining or errors:
        return _fail(f"{remaining} undelivered, errors: {errors[:3]}")
    print(f"Produced {count} records to {args.topic}.", file=sys.stderr)
    return 0


def consume(args: argparse.Namespace) -> int:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap_server,
            # librdkafka wants a group id even for assign(); nothing is committed to it.
            "group.id": "kafkalite-cli",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    metadata = consumer.list_topics(args.topic, timeout=args.timeout).topics.get(args.topic)
    if metadata is None or metadata.error is not None:
        consumer.close()
        return _fail(f"unknown topic {args.topic}")
    start = OFFSET_BEGINNING if args.from_beginning else OFFSET_END
    consumer.assign([TopicPartition(args.topic, p, start) for p in metadata.partitions])
    seen = 0
    idle_deadline = time.monotonic() + args.timeout
    try:
        while args.max_messages is None or seen < args.max_messages:
            msg = consumer.poll(0.5)
            if msg is None:
                if args.timeout and time.monotonic() > idle_deadline:
                    break
                continue
            if msg.error():
                return _fail(str(msg.error()))
            idle_deadline = time.monotonic() + args.timeout
            value = (msg.value() or b"").decode(errors="replace")
            if args.print_key:
                key = (msg.key() or b"").decode(errors="replace")
                print(f"{key}{args.key_separator}{value}", flush=True)
            else:
                print(value, flush=True)
            seen += 1
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0


def add_parsers(sub: Any) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("-b", "--bootstrap-server", default=DEFAULT_BOOTSTRAP)
        p.add_argument("--timeout", type=float, default=10.0, help="seconds")

    topic = sub.add_parser("topic", help="create, list, describe or delete topics")
    tsub = topic.add_subparsers(dest="topic_command", required=True)
    create = tsub.add_parser("create")
    create.add_argument("topic")
    create.add_argument("-p", "--partitions", type=int, default=1)
    create.add_argument("-r", "--replication-factor", type=int, default=1)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    create.set_defaults(func=topic_create)
    lst = tsub.add_parser("list")
    lst.set_defaults(func=topic_list)
    describe = tsub.add_parser("describe")
    describe.add_argument("topic")
    describe.set_defaults(func=topic_describe)
    delete = tsub.add_parser("delete")
    delete.add_argument("topic")
    delete.set_defaults(func=topic_delete)
    for p in (create, lst, describe, delete):
        common(p)

    prod = sub.add_parser("produce", help="produce lines from stdin")
    prod.add_argument("topic")
    prod.add_argument("--key-separator", default=None, help="split each line into key and value")
    prod.add_argument("--acks", default="all", choices=["0", "1", "all", "-1"])
    prod.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    common(prod)
    prod.set_defaults(func=produce)

    cons = sub.add_parser("consume", help="print a topic's records")
    cons.add_argument("topic")
    cons.add_argument("--from-beginning", action="store_true")
    cons.add_argument("-n", "--max-messages", type=int, default=None)
    cons.add_argument("--print-key", action="store_true")
    cons.add_argument("--key-separator", default="\t")
    common(cons)
    cons.set_defaults(func=consume)
