from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.cluster import Cluster

# Few internal partitions (fast creation), no initial rebalance delay, and a quick check
# for timed-out transactions so the timeout test runs in seconds.
TXN_CONFIG = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 4,
    "transaction.state.log.num.partitions": 4,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=TXN_CONFIG) as b:
        yield b


# A few partitions for __transaction_state and __consumer_offsets: replicated three times,
# fifty each would make the cluster's first coordinator lookup slow.
TXN_PARTITIONS = 6


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Three broker processes and a private ZooKeeper; a killed broker's leaderships move
    within seconds (6 s ZooKeeper sessions)."""
    with Cluster(
        brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": 6000,
            "transaction.state.log.num.partitions": TXN_PARTITIONS,
            "offsets.topic.num.partitions": 6,
            "group.initial.rebalance.delay.ms": 0,
        },
        data_dir=tmp_path / "kafkalite-cluster",
    ) as c:
        yield c
