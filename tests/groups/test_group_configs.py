"""Group-level configs (GROUP config resources) with Kafka 4.1's own kafka-configs tool:
set, described, refused outside the broker's bounds, kept across a restart, and applied —
a consumer-protocol member that dies is removed after its group's session timeout, not
the broker's."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.groups.conftest import GROUP_CONFIG
from tests.groups.members import Member, create_topic, wait_for

# Bounds wide enough for a short group session; the broker's own session stays long.
CONFIG = {
    **GROUP_CONFIG,
    "group.consumer.min.session.timeout.ms": 2000,
    "group.consumer.session.timeout.ms": 30000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 1000,
}


def kafka_configs(bootstrap: str, group: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "kafka.admin.ConfigCommand",
        ["--bootstrap-server", bootstrap, "--entity-type", "groups", "--entity-name", group, *args],
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def described_values(bootstrap: str, group: str) -> dict[str, str]:
    """The group's own values (kafka-python leaves out those at their default)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, group)])
    finally:
        admin.close()
    return {
        k: v["value"] if isinstance(v, dict) else v for k, v in described["group"][group].items()
    }


def members_of(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        described = admin.describe_consumer_groups([group])[group].result(timeout=20)
    except KafkaException:
        return 0  # gone with its last member: it committed no offsets
    return len(described.members)


def test_kafka_configs_sets_describes_and_the_group_uses_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    group = "g-configs"
    with Broker(log_dirs=data, config=CONFIG) as b:
        bs = b.bootstrap_servers
        added = kafka_configs(
            bs,
            group,
            "--alter",
            "--add-config",
            "consumer.session.timeout.ms=3000,consumer.heartbeat.interval.ms=600",
        )
        assert added.returncode == 0, added.stderr[-2000:]
        assert f"Completed updating config for group {group}." in added.stdout
        refused = kafka_configs(
            bs, group, "--alter", "--add-config", "consumer.session.timeout.ms=1000"
        )
        assert refused.returncode != 0
        assert (
            "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms" in refused.stdout + refused.stderr
        )
        topic = "t-configs"
        create_topic(bs, topic, 1)
        member = Member(bs, topic, group, "confluent", protocol="consumer")
        try:
            wait_for(lambda: member.assignment, 30, "the member's assignment")
            member.kill()
            gone_from = time.monotonic()
            wait_for(lambda: members_of(bs, group) == 0, 25, "the dead member's removal")
            # The group's 3 s session, not the broker's 30 s.
            assert time.monotonic() - gone_from < 15
        finally:
            member.kill()
    with Broker(log_dirs=data, config=CONFIG) as b:
        assert described_values(b.bootstrap_servers, group) == {
            "consumer.session.timeout.ms": "3000",
            "consumer.heartbeat.interval.ms": "600",
        }
        # Kafka's tool finds the group through ListConfigResources, then describes it.
        shown = kafka_configs(b.bootstrap_servers, group, "--describe")
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert f"Dynamic configs for group {group} are:" in shown.stdout, shown.stdout
        assert "consumer.session.timeout.ms=3000" in shown.stdout, shown.stdout
        removed = kafka_configs(
            b.bootstrap_servers, group, "--alter", "--delete-config", "consumer.session.timeout.ms"
        )
        assert removed.returncode == 0, removed.stderr[-2000:]
        assert described_values(b.bootstrap_servers, group) == {
            "consumer.heartbeat.interval.ms": "600"
        }
