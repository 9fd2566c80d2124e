"""Group-level configs on a 3-broker cluster: set through one broker with Kafka's own
kafka-configs, they are stored in ZooKeeper (``/config/groups/<group>``), every broker
describes them, the group's coordinator — whichever broker it is — applies them, and a
deletion through another broker reaches all."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkalite.cluster import Cluster
from kafkalite.controller import entity_configs
from tests.cluster.conftest import wait_for
from tests.groups.members import Member, create_topic
from tests.groups.test_group_configs import CONFIG, described_values, kafka_configs, members_of


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {**CONFIG, "offsets.topic.replication.factor": 3}
    with Cluster(
        brokers=3, overrides=overrides, data_dir=tmp_path_factory.mktemp("group-configs")
    ) as c:
        yield c


def test_group_configs_reach_every_broker_and_the_coordinator_applies_them(
    cluster: Cluster,
) -> None:
    c = cluster
    first, second, third = (b.bootstrap_servers for b in c.brokers)
    group = "g-cluster-configs"
    added = kafka_configs(
        first,
        group,
        "--alter",
        "--add-config",
        "consumer.session.timeout.ms=3000,consumer.heartbeat.interval.ms=600",
    )
    assert added.returncode == 0, added.stderr[-2000:]
    assert entity_configs.read(c.zk, "groups", group) == {
        "consumer.session.timeout.ms": "3000",
        "consumer.heartbeat.interval.ms": "600",
    }
    expected = {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "600"}
    for bootstrap in (first, second, third):
        wait_for(lambda b=bootstrap: described_values(b, group) == expected, 15)
    # Out of the brokers' bounds: refused by whichever broker is asked, nothing stored.
    refused = kafka_configs(
        third, group, "--alter", "--add-config", "consumer.session.timeout.ms=1000"
    )
    assert refused.returncode != 0
    assert entity_configs.read(c.zk, "groups", group)["consumer.session.timeout.ms"] == "3000"

    topic = "t-cluster-configs"
    create_topic(c.bootstrap_servers, topic, 1)
    member = Member(c.bootstrap_servers, topic, group, "confluent", protocol="consumer")
    try:
        wait_for(lambda: member.assignment, 30)
        member.kill()
        gone_from = time.monotonic()
        wait_for(lambda: members_of(c.bootstrap_servers, group) == 0, 25)
        # The group's 3 s session, not the brokers' 30 s.
        assert time.monotonic() - gone_from < 15
    finally:
        member.kill()

    removed = kafka_configs(
        second, group, "--alter", "--delete-config", "consumer.session.timeout.ms"
    )
    assert removed.returncode == 0, removed.stderr[-2000:]
    for bootstrap in (first, second, third):
        wait_for(
            lambda b=bootstrap: (
                described_values(b, group) == {"consumer.heartbeat.interval.ms": "600"}
            ),
            15,
        )
    shown = kafka_configs(third, group, "--describe")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "consumer.heartbeat.interval.ms=600" in shown.stdout, shown.stdout
