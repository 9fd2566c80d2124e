"""Acknowledged writes survive faults: at least 20 per run, mixing every kind (leader
SIGKILL, leader SIGSTOP past the session timeout, leader cut off the network, a follower's
data dir lost, all brokers killed), on an RF=3, min.insync.replicas=2 topic written with
acks=all and idempotence. Zero lost, zero duplicated, zero reordered."""

from __future__ import annotations

from kafkalite.chaos.checker import Writers
from kafkalite.chaos.faults import Target
from kafkalite.chaos.netcut import NetCut
from kafkalite.chaos.schedule import Schedule, run
from kafkalite.cluster import Cluster
from tests.chaos.conftest import create_topic

FAULT_COUNT = 20
# The faults a plain cluster can take (power-loss and clock-jump need their own disks and
# clocks: test_power_loss_and_clock_jump).
BASIC_FAULTS = ["kill-leader", "pause-leader", "isolate-leader", "wipe-follower", "kill-all"]


def test_no_acknowledged_write_lost_or_duplicated_over_20_faults(
    chaos_cluster: Cluster, netcut: NetCut
) -> None:
    create_topic(chaos_cluster, "chaos", rf=3)
    target = Target(chaos_cluster, "chaos", netcut=netcut)
    writers = Writers(chaos_cluster.bootstrap_servers, "chaos", writers=2, rate=100).start()
    schedule = Schedule(faults=BASIC_FAULTS, count=FAULT_COUNT)
    result = run(target, schedule, writers, say=print)
    print(result.summary())
    assert result.faults >= FAULT_COUNT
    assert result.acked > 0
    assert result.lost == 0, result.summary()
    assert result.duplicated == 0, result.summary()
    assert result.reordered == 0, result.summary()


def test_isolated_broker_loses_its_session_and_comes_back_when_restored(
    chaos_cluster: Cluster, netcut: NetCut
) -> None:
    """The network cut is real: the cut-off broker's ZooKeeper registration expires, and
    it registers again once the link is restored."""
    import time

    from kafkalite.controller import znodes

    zk = chaos_cluster.zk
    victim = chaos_cluster.brokers[0]
    path = znodes.broker_path(victim.broker_id)
    before = zk.exists(path)
    assert before is not None
    netcut.isolate(victim.broker_id)
    try:
        deadline = time.monotonic() + chaos_cluster.session_timeout_s + 10
        while zk.exists(path) is not None:
            assert time.monotonic() < deadline, "the isolated broker's session never expired"
            time.sleep(0.1)
        assert victim.running  # cut off, not dead
    finally:
        netcut.restore()
    deadline = time.monotonic() + 30
    while (now := zk.exists(path)) is None:
        assert time.monotonic() < deadline, "the broker did not register again after restore"
        time.sleep(0.1)
    assert now.ephemeralOwner != before.ephemeralOwner


def test_brokers_hand_out_distinct_producer_ids(chaos_cluster: Cluster) -> None:
    """Idempotence holds per producer id: two producers given the same id by two brokers
    would see each other's sequence numbers as out of order (the checker's writers did)."""
    from kafkalite import _core

    ids = []
    for b in chaos_cluster.brokers:
        with _core.KafkaClient(b.bootstrap_servers) as client:
            ids.append(client.init_producer_id()[0])
    assert len(set(ids)) == len(ids), ids
