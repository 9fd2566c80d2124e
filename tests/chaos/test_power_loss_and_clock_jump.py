"""One broker at a time loses power with unsynced writes, or has its wall clock stepped,
on an RF=3, min.insync.replicas=2 topic written with acks=all and idempotence (default
flush settings: nothing fsynced before the ack). Zero lost, duplicated or reordered: a
replica that lost its tail truncates and fetches again, and ISR timeouts do not follow
the wall clock."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.chaos.checker import Writers
from kafkalite.chaos.disks import BrokerDisks
from kafkalite.chaos.faults import Target
from kafkalite.chaos.schedule import Schedule, run
from kafkalite.chaos.wallclock import WallClocks
from kafkalite.cluster import Cluster
from tests.chaos.conftest import OVERRIDES, create_topic

BROKER_IDS = (1, 2, 3)
# Small segments: a segment is fsynced when it rolls, so a power cut leaves a synced
# prefix and drops an unsynced tail, not always the whole log.
SEGMENTS = {"segment.bytes": str(16 << 10)}


@pytest.fixture
def disks(tmp_path: Path) -> Iterator[BrokerDisks]:
    why = BrokerDisks.available()
    if why is not None:
        pytest.skip(why)
    with BrokerDisks(tmp_path / "disks", BROKER_IDS) as d:
        yield d


@pytest.fixture
def clocks(tmp_path: Path) -> WallClocks:
    why = WallClocks.available()
    if why is not None:
        pytest.skip(why)
    return WallClocks(tmp_path / "clocks").build()


def checked_run(target: Target, fault: str) -> None:
    cluster = target.cluster
    create_topic(cluster, target.topic, rf=3, config=SEGMENTS)
    writers = Writers(cluster.bootstrap_servers, target.topic, writers=2, rate=100).start()
    result = run(target, Schedule(faults=[fault], count=1), writers, say=print)
    print(result.summary(), target.anomalies)
    assert result.faults == 1
    assert result.acked > 0
    assert result.lost == 0, result.summary()
    assert result.duplicated == 0, result.summary()
    assert result.reordered == 0, result.summary()


def test_power_loss_of_the_leader_loses_no_acknowledged_write(
    tmp_path: Path, disks: BrokerDisks
) -> None:
    with Cluster(
        brokers=len(BROKER_IDS),
        overrides=OVERRIDES,
        data_dir=tmp_path / "cluster",
        broker_overrides=disks.overrides(),
    ) as cluster:
        target = Target(cluster, "power", disks=disks, rng=random.Random(17))
        checked_run(target, "power-loss")
    assert disks.power_cuts == 1


def test_leader_clock_stepped_back_an_hour_still_drops_a_stopped_follower(
    tmp_path: Path, clocks: WallClocks
) -> None:
    """The step is seen (LogAppendTime on the stepped broker moves by an hour), and lag is
    timed on the monotonic clock: the stopped follower leaves the ISR in seconds."""
    # A session well past the lag time: the stopped follower must leave the ISR through
    # the leader's lag check, not because ZooKeeper expired it.
    overrides = {**OVERRIDES, "zookeeper.session.timeout.ms": 10_000}
    with Cluster(
        brokers=len(BROKER_IDS),
        overrides=overrides,
        data_dir=tmp_path / "cluster",
        broker_env=clocks.env,
    ) as cluster:
        target = Target(
            cluster, "clock", clocks=clocks, rng=random.Random(17), clock_steps_ms=(-3_600_000,)
        )
        checked_run(target, "clock-jump")
    assert target.anomalies == []
