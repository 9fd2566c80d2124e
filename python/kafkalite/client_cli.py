"""The client verbs of the ``kafkalite`` command: topic admin, produce, consume. They talk
to a broker over the wire like any Kafka client (librdkafka through confluent-kafka)."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, BinaryIO

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
EXIT_FAILED = 1

Verb = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A failure worth one line on stderr, not a traceback."""


# Authentication and TLS failures librdkafka reports through its error callback: a
# request then fails only as a transport error, which alone would hide the cause.
_SECURITY_ERRORS: list[str] = []


def _on_client_error(err: Any) -> None:
    from confluent_kafka import KafkaError

    if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
        _SECURITY_ERRORS.append(err.str())


def _client_config(args: argparse.Namespace, **extra: object) -> dict[str, Any]:
    # librdkafka logs every failed connect attempt to stderr; route its log through Python
    # logging so it shows with -v and otherwise leaves only our one-line error.
    log = logging.getLogger("kafkalite.librdkafka")
    if not getattr(args, "verbose", False):
        log.setLevel(logging.CRITICAL)
    security: dict[str, str] = {}
    if getattr(args, "command_config", None):
        from kafkalite.command_config import CommandConfigError, librdkafka_settings

        try:
            security = librdkafka_settings(args.command_config)
        except CommandConfigError as e:
            raise CliError(str(e)) from None
    return {
        "bootstrap.servers": args.bootstrap_server,
        "logger": log,
        "error_cb": _on_client_error,
        **security,
        **extra,
    }


def _admin(args: argparse.Namespace) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(_client_config(args))


def _explain(e: BaseException, args: argparse.Namespace) -> str:
    """One line for a client error, with a hint when the broker could not be reached."""
    err: Any = e.args[0] if e.args else None
    text = err.str() if hasattr(err, "str") else str(e)
    name = err.name() if hasattr(err, "name") else ""
    if _SECURITY_ERRORS and name in ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN"):
        text += f" ({_SECURITY_ERRORS[-1]})"
    elif name in ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_RESOLVE"):
        text += f" (is a broker running at {args.bootstrap_server}?)"
    return text


def _verb(func: Verb) -> Verb:
    """Turn client exceptions into a message on stderr and a non-zero exit status."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        from confluent_kafka import KafkaException

        try:
            return func(args)
        except CliError as e:
            print(f"kafkalite: {e}", file=sys.stderr)
        except KafkaException as e:
            print(f"kafkalite: {_explain(e, args)}", file=sys.stderr)
        return EXIT_FAILED

    return wrapper


def _topic_names(admin: Any, timeout: float) -> dict[str, Any]:
    # A Metadata request for all topics: naming one topic would let the broker auto-create it
    # (librdkafka's admin handle asks with allow_auto_topic_creation=true).
    try:
        return dict(admin.list_topics(timeout=timeout).topics)
    except Exception:
        # Serve the error callback, which tells an authentication failure from a dead
        # broker (see _on_client_error).
        admin.poll(0)
        raise


def _key_values(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


@_verb
def topic_create(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import NewTopic

    configs = _key_values(args.config, "--config")
    # The client must outlive its futures: librdkafka cancels them when it is destroyed.
    admin = _admin(args)
    new = NewTopic(args.topic, args.partitions, args.replication_factor, config=configs)
    future = admin.create_topics([new], request_timeout=args.timeout)[args.topic]
    try:
        future.result(args.timeout)
    except Exception as e:
        raise CliError(f"cannot create topic {args.topic}: {_explain(e, args)}") from None
    print(f"Created topic {args.topic}.")
    return 0


@_verb
def topic_list(args: argparse.Namespace) -> int:
    for name in sorted(_topic_names(_admin(args), args.timeout)):
        print(name)
    return 0


@_verb
def topic_describe(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import ConfigResource

    admin = _admin(args)
    topic = _topic_names(admin, args.timeout).get(args.topic)
    if topic is None:
        raise CliError(f"topic {args.topic} does not exist")
    if topic.error is not None:
        raise CliError(f"topic {args.topic}: {topic.error.str()}")
    resource = ConfigResource("topic", args.topic)
    configs = admin.describe_configs([resource], request_timeout=args.timeout)[resource].result(
        args.timeout
    )
    overrides = {k: v.value for k, v in configs.items() if not v.is_default}
    settings = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
    replicas = len(next(iter(topic.partitions.values())).replicas) if topic.partitions else 0
    print(
        f"Topic: {args.topic}\tPartitionCount: {len(topic.partitions)}\t"
        f"ReplicationFactor: {replicas}\tConfigs: {settings}"
    )
    for pid, p in sorted(topic.partitions.items()):
        print(
            f"\tTopic: {args.topic}\tPartition: {pid}\tLeader: {p.leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isrs))}"
        )
    return 0


@_verb
def topic_delete(args: argparse.Namespace) -> int:
    admin = _admin(args)
    future = admin.delete_topics([args.topic], request_timeout=args.timeout)[args.topic]
    try:
        future.result(args.timeout)
    except Exception as e:
        raise CliError(f"cannot delete topic {args.topic}: {_explain(e, args)}") from None
    print(f"Deleted topic {args.topic}.")
    return 0


def _split_key(line: bytes, separator: bytes | None) -> tuple[bytes | None, bytes]:
    if separator and separator in line:
        key, value = line.split(separator, 1)
        return key, value
    return None, line


@_verb
def produce(args: argparse.Namespace) -> int:
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer(
        _client_config(
            args,
            acks=args.acks,
            **{"compression.type": args.compression, "linger.ms": 5},
        )
    )

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err.str())

    separator = args.key_separator.encode() if args.key_separator else None
    count = 0
    # Bytes, not text: records are whatever the lines hold, valid UTF-8 or not.
    stdin: BinaryIO = sys.stdin.buffer
    for raw in stdin:
        line = raw.removesuffix(b"\n").removesuffix(b"\r")
        key, value = _split_key(line, separator)
        while True:
            try:
                producer.produce(args.topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                # The local queue is full: wait for deliveries instead of failing.
                producer.poll(0.1)
        producer.poll(0)
        count += 1
        if errors:
            break
    remaining = producer.flush(args.timeout)
    if remaining:
        errors.insert(
            0,
            f"{remaining} of {count} records not delivered within {args.timeout:g} s "
            f"(is a broker running at {args.bootstrap_server}?)",
        )
        # Drop what is left so the client does not warn about it again on exit.
        producer.purge()
        producer.flush(0)
    if errors:
        raise CliError(f"producing to {args.topic} failed: {errors[0]}")
    print(f"Produced {count} records to {args.topic}.", file=sys.stderr)
    return 0


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@_verb
def consume(args: argparse.Namespace) -> int:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

    if args.group:
        # Share the topic's partitions with the group's other members and commit progress,
        # as kafka-console-consumer --group does; a new group starts at the end unless
        # --from-beginning.
        settings: dict[str, object] = {
            "group.id": args.group,
            "enable.auto.commit": True,
            "auto.offset.reset": "earliest" if args.from_beginning else "latest",
        }
    else:
        # librdkafka wants a group id even for assign(); nothing is ever committed to this
        # throwaway one, and the consumer never joins it.
        settings = {
            "group.id": f"kafkalite-cli-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    consumer = Consumer(_client_config(args, **settings, **{"enable.partition.eof": False}))
    out = sys.stdout.buffer
    separator = args.key_separator.encode()
    seen = 0
    # SIGTERM (kill, a service manager, a container stop) ends the loop like Ctrl-C, so the
    # consumer is closed and leaves its group at once, as Kafka's console consumer does;
    # otherwise the group stays Stable until the session times out and cannot be reset.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        # --timeout 0 waits for ever, for the broker as for records.
        metadata = consumer.list_topics(args.topic, timeout=args.timeout or -1)
        topic = metadata.topics.get(args.topic)
        if topic is None or topic.error is not None:
            raise CliError(f"topic {args.topic} does not exist")
        if args.group:
            consumer.subscribe([args.topic])
        else:
            start = OFFSET_BEGINNING if args.from_beginning else OFFSET_END
            consumer.assign([TopicPartition(args.topic, p, start) for p in topic.partitions])
        idle_deadline = time.monotonic() + args.timeout
        while args.max_messages is None or seen < args.max_messages:
            msg = consumer.poll(0.2)
            if msg is None:
                if args.timeout and time.monotonic() > idle_deadline:
                    break
                continue
            error = msg.error()
            if error is not None:
                raise CliError(f"consuming {args.topic} failed: {error.str()}")
            idle_deadline = time.monotonic() + args.timeout
            if args.print_key:
                out.write((msg.key() or b"") + separator)
            out.write((msg.value() or b"") + b"\n")
            out.flush()
            seen += 1
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # The reader of our output (`| head`) has gone: a normal way to stop. Point stdout
        # at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        consumer.close()
        signal.signal(signal.SIGTERM, previous)
    print(f"Processed a total of {seen} messages.", file=sys.stderr)
    return 0


BROKER_TIMEOUT_HELP = "seconds to wait for the broker's answers (default: %(default)s)"


def add_common_arguments(p: argparse.ArgumentParser, timeout_help: str) -> None:
    p.add_argument(
        "-b",
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help="the broker(s) to talk to, comma-separated (default: %(default)s)",
    )
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help=timeout_help)
    p.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties (security.protocol, sasl.*, ssl.*) as Kafka's tools take them",
    )


COMPRESSIONS = ["none", "gzip", "snappy", "lz4", "zstd"]


def add_parsers(sub: Any) -> None:
    topic = sub.add_parser("topic", help="create, list, describe or delete topics")
    tsub = topic.add_subparsers(dest="topic_command", required=True, metavar="COMMAND")
    create = tsub.add_parser("create", help="create a topic")
    create.add_argument("topic", help="topic name")
    create.add_argument(
        "-p", "--partitions", type=int, default=1, help="number of partitions (default: 1)"
    )
    create.add_argument(
        "-r",
        "--replication-factor",
        type=int,
        default=1,
        help="replicas per partition (a single broker has 1)",
    )
    create.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config such as retention.ms=86400000 (repeatable)",
    )
    create.set_defaults(func=topic_create)
    lst = tsub.add_parser("list", help="list topic names")
    lst.set_defaults(func=topic_list)
    describe = tsub.add_parser("describe", help="partitions, leader, replicas, ISR, configs")
    describe.add_argument("topic", help="topic name")
    describe.set_defaults(func=topic_describe)
    delete = tsub.add_parser("delete", help="delete a topic and its data")
    delete.add_argument("topic", help="topic name")
    delete.set_defaults(func=topic_delete)
    for p in (create, lst, describe, delete):
        add_common_arguments(p, BROKER_TIMEOUT_HELP)

    prod = sub.add_parser("produce", help="produce one record per stdin line")
    prod.add_argument("topic", help="topic to write to")
    prod.add_argument(
        "--key-separator",
        default=None,
        metavar="SEP",
        help="split each line at the first SEP into key and value (default: no key)",
    )
    prod.add_argument(
        "--acks",
        default="all",
        choices=["0", "1", "all", "-1"],
        help="acknowledgements a write waits for (default: all)",
    )
    prod.add_argument(
        "--compression",
        default="none",
        choices=COMPRESSIONS,
        help="compress record batches with this codec (default: none)",
    )
    add_common_arguments(
        prod, "seconds to wait, after stdin ends, for every record to be delivered (default: 10)"
    )
    prod.set_defaults(func=produce)

    cons = sub.add_parser("consume", help="print a topic's records, one per line")
    cons.add_argument("topic", help="topic to read")
    cons.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the oldest record (default: only new ones; a group resumes where it was)",
    )
    cons.add_argument(
        "-g", "--group", default=None, help="consume as a member of this consumer group"
    )
    cons.add_argument(
        "-n",
        "--max-messages",
        type=int,
        default=None,
        metavar="N",
        help="exit after N records (default: no limit)",
    )
    cons.add_argument("--print-key", action="store_true", help="print each key before its value")
    cons.add_argument(
        "--key-separator",
        default="\t",
        metavar="SEP",
        help="printed between key and value with --print-key (default: a tab)",
    )
    add_common_arguments(
        cons,
        "exit after this many seconds without a record, also the wait for the broker; "
        "0: wait forever (default: 10)",
    )
    cons.set_defaults(func=consume)
