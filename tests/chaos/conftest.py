"""A 3-broker cluster for chaos tests: short ZooKeeper sessions and replica lag so faults
are noticed in seconds, every broker in its own cgroup so its network can be cut."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.chaos.netcut import NetCut
from kafkalite.cluster import Cluster
from tests.cluster.conftest import settled

SESSION_MS = 4000
OVERRIDES = {
    "zookeeper.session.timeout.ms": SESSION_MS,
    "replica.lag.time.max.ms": 3000,
    "offsets.topic.replication.factor": 3,
}


@pytest.fixture
def netcut() -> Iterator[NetCut]:
    cut = NetCut()
    try:
        yield cut
    finally:
        cut.close()  # the link is restored whatever happened


@pytest.fixture
def chaos_cluster(tmp_path: Path, netcut: NetCut) -> Iterator[Cluster]:
    with Cluster(
        brokers=3, overrides=OVERRIDES, data_dir=tmp_path / "cluster", broker_wrap=netcut.wrap
    ) as cluster:
        yield cluster


def create_topic(
    cluster: Cluster,
    topic: str,
    rf: int,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    config = {**({"min.insync.replicas": "2"} if rf >= 3 else {}), **(config or {})}
    new = NewTopic(topic, partitions, rf, config=config)
    admin.create_topics([new], operation_timeout=30)[topic].result(30)
    settled([b.bootstrap_servers for b in cluster.brokers], topic, partitions)
