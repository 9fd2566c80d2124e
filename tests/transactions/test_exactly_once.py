"""Consume-transform-produce with send_offsets_to_transaction, the transforming process
SIGKILLed at random moments and restarted: under read_committed the output holds every
input record exactly once, and the group's committed offsets match the output. The
transformer is confluent-kafka (`eos_worker.py`) or the Java client (`EosWorker.java`,
Kafka 4.1.1's kafka-clients), on one broker and (confluent-kafka) on a 3-broker cluster.

`KAFKALITE_EOS_KILLS` sets the number of kills (default 6 for confluent-kafka and 3 for
the slower-starting Java client and for the cluster keeps CI short; the acceptance run uses
20)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from kafkalite.cluster import Cluster
from tests.cluster.conftest import settled
from tests.transactions.helpers import create, drain

PARTITIONS = 3
RECORDS = 3000


JAVA_WORKER = Path(__file__).with_name("EosWorker.java")


def _command(client: str, bootstrap: str) -> list[str]:
    if client == "java":
        libs = kafka_ref.ensure_jars()
        return ["java", "-Xmx256m", "-cp", kafka_ref.classpath(libs), str(JAVA_WORKER), bootstrap]
    return [sys.executable, "-m", "tests.transactions.eos_worker", bootstrap]


def _start(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _committed(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos"})
    got = c.committed([TopicPartition("in", p) for p in range(PARTITIONS)], timeout=10)
    c.close()
    return {tp.partition: tp.offset for tp in got}


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_sigkilled_transformer_yields_every_record_exactly_once(
    broker: Broker, client: str
) -> None:
    bs = broker.bootstrap_servers
    create(bs, "in", PARTITIONS)
    create(bs, "out", PARTITIONS)
    kills = int(os.environ.get("KAFKALITE_EOS_KILLS", "3" if client == "java" else "6"))
    _kill_loop(bs, client, kills)


def test_sigkilled_transformer_on_a_cluster(cluster: Cluster) -> None:
    """The same loop on three brokers: input and output replicated three times, the
    transaction and group coordinators wherever their ids hash, markers crossing brokers."""
    bs = cluster.bootstrap_servers
    for topic in ("in", "out"):
        create(bs, topic, PARTITIONS, replicas=3)
        settled([b.bootstrap_servers for b in cluster.brokers], topic, PARTITIONS)
    _kill_loop(bs, "confluent", int(os.environ.get("KAFKALITE_EOS_KILLS", "3")))


def _kill_loop(bs: str, client: str, kills: int) -> None:
    command = _command(client, bs)
    rng = random.Random(15)
    source = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    per_partition: dict[int, int] = {p: 0 for p in range(PARTITIONS)}
    sent = 0
    worker = _start(command)
    try:
        for _ in range(kills):
            # Feed more input while the worker runs, then kill it somewhere in its loop.
            for _ in range(RECORDS // kills):
                p = sent % PARTITIONS
                source.produce("in", key=b"%d" % sent, value=b"v-%d" % sent, partition=p)
                per_partition[p] += 1
                sent += 1
            source.flush()
            # The JVM takes a few seconds to start: kill it inside its loop too.
            time.sleep(rng.uniform(*((1.5, 5.0) if client == "java" else (0.3, 2.0))))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            worker = _start(command)
        # Let the last instance finish the input.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if _committed(bs) == per_partition:
                break
            time.sleep(1)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()

    assert _committed(bs) == per_partition
    out = drain(bs, "out", PARTITIONS, "read_committed")
    values = [m.value() for m in out]
    assert len(values) == len(set(values)), "duplicates in the committed output"
    assert sorted(values) == sorted(b"V-%d" % i for i in range(sent))
    # Committed offsets match the output: per partition, as many outputs as inputs consumed.
    by_partition = {p: 0 for p in range(PARTITIONS)}
    for m in out:
        by_partition[m.partition()] += 1
    assert by_partition == per_partition
    # The aborted attempts of killed instances are in the log, invisible to read_committed.
    assert len(drain(bs, "out", PARTITIONS, "read_uncommitted", 1.0)) >= len(values)
