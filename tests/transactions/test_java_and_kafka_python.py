"""The Java client (Kafka's producer-perf-test with a transactional id) and Kafka's
`kafka-transactions` tool (list, describe, describe-producers, abort), and kafka-python's
transactional producer."""

from __future__ import annotations

import subprocess

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.transactions.helpers import create, drain


def _tool(main_class: str, *args: str) -> str:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, list(args))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (main_class, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def _transactions(bootstrap: str, *args: str) -> str:
    return _tool(
        "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bootstrap, *args
    )


def test_java_transactional_producer_and_kafka_transactions_tool(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "java", 2)
    _tool(
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        "java",
        "--num-records",
        "400",
        "--record-size",
        "50",
        "--throughput",
        "-1",
        "--transactional-id",
        "java-tx",
        "--transaction-duration-ms",
        "50",
        "--producer-props",
        f"bootstrap.servers={bs}",
    )
    assert len(drain(bs, "java", 2, "read_committed", 1.5)) == 400
    listed = _transactions(bs, "list")
    assert "java-tx" in listed
    described = _transactions(bs, "describe", "--transactional-id", "java-tx")
    assert "CompleteCommit" in described or "Empty" in described

    # An open transaction, found with describe-producers and aborted with the tool.
    create(bs, "stuck", 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": "stuck-tx"})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("stuck", value=b"hanging", partition=0)
    p.flush()
    producers = _transactions(bs, "describe-producers", "--topic", "stuck", "--partition", "0")
    rows = [line.split() for line in producers.splitlines()[1:] if line.strip()]
    assert rows and rows[0][-1] == "0", producers  # CurrentTransactionStartOffset
    _transactions(bs, "abort", "--topic", "stuck", "--partition", "0", "--start-offset", "0")
    c = Consumer({"bootstrap.servers": bs, "group.id": "s", "isolation.level": "read_committed"})
    _, lso = c.get_watermark_offsets(TopicPartition("stuck", 0), timeout=10, cached=False)
    c.close()
    assert lso == 2  # the data and the tool's ABORT marker
    assert drain(bs, "stuck", 1, "read_committed", 1.0) == []


def test_kafka_python_transactional_producer(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create(bs, "kp", 1)
    p = KafkaProducer(bootstrap_servers=bs, transactional_id="kp-tx")
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.send("kp", value=b"kept-%d" % i)
    p.commit_transaction()
    p.begin_transaction()
    p.send("kp", value=b"dropped")
    p.flush()
    p.abort_transaction()
    p.close()
    got = sorted(m.value() for m in drain(bs, "kp", 1, "read_committed", 1.0))
    assert got == [b"kept-%d" % i for i in range(5)]
    assert len(drain(bs, "kp", 1, "read_uncommitted", 1.0)) == 6


def test_kafka_delete_records(broker: Broker, tmp_path) -> None:
    bs = broker.bootstrap_servers
    create(bs, "del", 1)
    p = Producer({"bootstrap.servers": bs})
    for i in range(10):
        p.produce("del", value=b"r-%d" % i, partition=0)
    p.flush()
    spec = tmp_path / "offsets.json"
    spec.write_text('{"partitions": [{"topic": "del", "partition": 0, "offset": 4}], "version": 1}')
    out = _tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        bs,
        "--offset-json-file",
        str(spec),
    )
    assert "low_watermark: 4" in out, out
    got = [m.value() for m in drain(bs, "del", 1, "read_uncommitted", 1.0)]
    assert got == [b"r-%d" % i for i in range(4, 10)]
    c = Consumer({"bootstrap.servers": bs, "group.id": "d"})
    assert c.get_watermark_offsets(TopicPartition("del", 0), timeout=10) == (4, 10)
    c.close()
    # Past the high watermark: refused, nothing moves.
    spec.write_text(
        '{"partitions": [{"topic": "del", "partition": 0, "offset": 99}], "version": 1}'
    )
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "org.apache.kafka.tools.DeleteRecordsCommand",
        ["--bootstrap-server", bs, "--offset-json-file", str(spec)],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert "OffsetOutOfRange" in done.stdout + done.stderr
