"""Kafka's own Java tools against the cluster: kafka-topics --describe, the console
producer and consumer (the Java client), kafka-metadata-quorum, on the jars the bench
resolves with Maven."""

from __future__ import annotations

import subprocess

from kafkalite.bench import kafka_ref
from kafkalite.cluster import Cluster
from tests.cluster.conftest import settled
from tests.cluster.test_cluster import create


def _tool(main_class: str, *args: str, stdin: str | None = None) -> str:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, list(args))
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (main_class, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def test_kafka_topics_describe_and_the_java_client(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    create(c.bootstrap_servers, "java", 3, 3)
    meta = settled([b.bootstrap_servers for b in c.brokers], "java", 3)
    out = _tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        c.brokers[0].bootstrap_servers,
        "--describe",
        "--topic",
        "java",
    )
    assert "PartitionCount: 3\tReplicationFactor: 3" in out
    for p, m in meta.items():
        replicas = ",".join(map(str, m.replicas))
        isr = ",".join(map(str, m.isr))
        assert f"Partition: {p}\tLeader: {m.leader}\tReplicas: {replicas}\tIsr: {isr}" in out

    lines = [f"line-{i}" for i in range(30)]
    _tool(
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server",
        c.brokers[1].bootstrap_servers,
        "--topic",
        "java",
        stdin="\n".join(lines) + "\n",
    )
    got = _tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        c.brokers[2].bootstrap_servers,
        "--topic",
        "java",
        "--from-beginning",
        "--max-messages",
        "30",
        "--timeout-ms",
        "60000",
    )
    assert sorted(got.split()) == sorted(lines)


def test_kafka_metadata_quorum_names_the_zookeeper_elected_controller(
    kafkalite_cluster: Cluster,
) -> None:
    c = kafkalite_cluster
    controller = c.controller_id()
    for describe in ("--status", "--replication"):
        cmd = kafka_ref.tool_command(
            kafka_ref.ensure_jars(),
            "org.apache.kafka.tools.MetadataQuorumCommand",
            ["--bootstrap-server", c.bootstrap_servers, "describe", describe],
        )
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
        first = next(line for line in done.stderr.splitlines() if not line.startswith("SLF4J"))
        assert first == (
            "org.apache.kafka.common.errors.UnsupportedVersionException: This cluster has no"
            f" KRaft metadata quorum to describe: its controller is broker {controller},"
            " elected through ZooKeeper; there is no __cluster_metadata log"
        ), done.stderr[-2000:]
