"""Kafka 4.1's own admin tools against one kafkalite broker, for the protocol pieces of
issue 16: feature flags (`kafka-features`), broker log levels (`kafka-configs
--entity-type broker-loggers`), paginated topic descriptions
(`kafka-topics --describe`, DescribeTopicPartitions), group types
(`kafka-consumer-groups --list --type`, ListGroups v5) and the metadata quorum
(`kafka-metadata-quorum`, which a ZooKeeper-controlled cluster does not have)."""

from __future__ import annotations

import subprocess
import time

from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic

from kafkalite import Broker
from kafkalite.bench import kafka_ref


def tool(main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, list(args))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


FEATURES = "org.apache.kafka.tools.FeatureCommand"


def test_kafka_features_describe_upgrade_and_downgrade(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    out = ok(tool(FEATURES, "--bootstrap-server", boot, "describe"))
    assert "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2" in out
    assert "FinalizedVersionLevel: 2" in out
    # KIP-848's consumer protocol is served: group.version 1.
    assert "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1" in out
    # KIP-932's share groups are served: share.version 2, as Kafka 4.4 finalizes it.
    assert "Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2" in out
    ok(tool(FEATURES, "--bootstrap-server", boot, "upgrade", "--feature", "share.version=2"))
    # KRaft's features are not claimed by a ZooKeeper-controlled cluster.
    assert "metadata.version" not in out and "kraft.version" not in out
    # Asking for the level already finalized is a no-op that succeeds, as on Kafka.
    ok(tool(FEATURES, "--bootstrap-server", boot, "upgrade", "--feature", "transaction.version=2"))
    done = tool(
        FEATURES, "--bootstrap-server", boot, "downgrade", "--feature", "transaction.version=1"
    )
    assert done.returncode != 0
    assert "fixed at level 2" in done.stdout + done.stderr
    done = tool(FEATURES, "--bootstrap-server", boot, "upgrade", "--feature", "no.such.feature=1")
    assert done.returncode != 0
    assert "does not support this feature" in done.stdout + done.stderr


def test_kafka_topics_describe_pages_through_describe_topic_partitions(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        admin.create_topics([NewTopic("paged-a", 5, 1), NewTopic("paged-b", 3, 1)])
    finally:
        admin.close()
    # Two partitions per answer: the tool follows next_cursor across both topics.
    out = ok(
        tool(
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            boot,
            "--describe",
            "--topic",
            "paged-.*",
            "--partition-size-limit-per-response",
            "2",
        )
    )
    for topic, count in (("paged-a", 5), ("paged-b", 3)):
        assert f"Topic: {topic}\tTopicId:" in out
        assert f"PartitionCount: {count}\t" in out
        for p in range(count):
            assert f"Topic: {topic}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1" in out, out


def test_kafka_consumer_groups_list_with_types(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    consumer = KafkaConsumer(
        "typed", bootstrap_servers=boot, group_id="typed-group", consumer_timeout_ms=500
    )
    try:
        consumer.poll(timeout_ms=2000)
    finally:
        consumer.close()
    groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    out = ok(tool(groups, "--bootstrap-server", boot, "--list", "--type"))
    row = next(line.split() for line in out.splitlines() if line.startswith("typed-group"))
    assert row == ["typed-group", "Classic"], out
    out = ok(tool(groups, "--bootstrap-server", boot, "--list", "--type", "classic"))
    assert "typed-group" in out
    out = ok(tool(groups, "--bootstrap-server", boot, "--list", "--type", "consumer"))
    assert "typed-group" not in out


CONFIGS = "kafka.admin.ConfigCommand"


def test_kafka_configs_reads_and_sets_broker_log_levels(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    logger = ["--bootstrap-server", boot, "--entity-type", "broker-loggers", "--entity-name", "1"]
    out = ok(tool(CONFIGS, *logger, "--describe"))
    assert "root=INFO" in out, out
    # kafka-configs only alters loggers the broker lists.
    ok(tool(CONFIGS, *logger, "--alter", "--add-config", "root=WARN"))
    out = ok(tool(CONFIGS, *logger, "--describe"))
    assert "root=WARN" in out, out
    ok(tool(CONFIGS, *logger, "--alter", "--add-config", "root=INFO"))
    done = tool(CONFIGS, *logger, "--alter", "--add-config", "root=LOUD")
    assert done.returncode != 0 and "not a supported log level" in done.stdout + done.stderr
    done = tool(CONFIGS, *logger, "--alter", "--delete-config", "root")
    assert done.returncode != 0 and "root logger is not allowed" in done.stdout + done.stderr


QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"


def test_kafka_metadata_quorum_says_there_is_no_kraft_quorum_at_once(broker: Broker) -> None:
    boot = broker.bootstrap_servers
    for describe in ("--status", "--replication"):
        started = time.monotonic()
        done = tool(QUORUM, "--bootstrap-server", boot, "describe", describe)
        took = time.monotonic() - started
        assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
        # Not the admin client's retries running out ("Timed out waiting for a node
        # assignment" after its 60 s default), but the broker's own answer, printed first
        # (after SLF4J's note that the tool has no logging backend).
        first = next(line for line in done.stderr.splitlines() if not line.startswith("SLF4J"))
        assert first == (
            "org.apache.kafka.common.errors.UnsupportedVersionException: This cluster has no"
            " KRaft metadata quorum to describe: this single node (node 1) is its own"
            " controller; there is no __cluster_metadata log"
        ), done.stderr[-2000:]
        assert took < 30, f"{describe} took {took:.0f} s"
