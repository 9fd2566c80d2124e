"""Replica assignment as Kafka's AdminUtils, Kafka's znode JSON, and the private
ZooKeeper's start and missing-package error."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkalite.controller import assignment, isr, znodes, zookeeper
from kafkalite.controller.assignment import AssignmentError


def test_round_robin_spreads_leaders_and_replicas() -> None:
    out = assignment.assign(6, 3, {1: None, 2: None, 3: None}, start_index=0)
    # Kafka's AdminUtils with a fixed start: leaders 1,2,3,1,2,3 and shifted followers.
    assert out == {
        0: [1, 2, 3],
        1: [2, 3, 1],
        2: [3, 1, 2],
        3: [1, 3, 2],
        4: [2, 1, 3],
        5: [3, 2, 1],
    }
    rng = random.Random(7)
    many = assignment.assign(60, 2, {b: None for b in range(1, 6)}, rng=rng)
    assert Counter(r[0] for r in many.values()) == {b: 12 for b in range(1, 6)}
    assert all(len(set(r)) == 2 for r in many.values())


def test_rack_aware_puts_replicas_on_distinct_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assert assignment.rack_alternated(racks) == [1, 3, 5, 2, 4, 6]
    out = assignment.assign(12, 3, racks, rng=random.Random(1))
    for replicas in out.values():
        assert len({racks[b] for b in replicas}) == 3, replicas
    assert Counter(r[0] for r in out.values()) == {b: 2 for b in racks}


def test_impossible_assignments_name_kafkas_error() -> None:
    with pytest.raises(AssignmentError) as e:
        assignment.assign(1, 4, {1: None, 2: None, 3: None})
    assert e.value.code_name == "INVALID_REPLICATION_FACTOR"
    assert "only 3 broker(s) are registered" in str(e.value)
    with pytest.raises(AssignmentError) as e:
        assignment.assign(1, 2, {1: "a", 2: None})
    assert e.value.code_name == "INVALID_REPLICA_ASSIGNMENT"
    with pytest.raises(AssignmentError, match="Unknown broker"):
        assignment.check_manual({0: [1, 9]}, {1, 2})
    with pytest.raises(AssignmentError, match="Duplicate"):
        assignment.check_manual({0: [1, 1]}, {1, 2})
    with pytest.raises(AssignmentError, match="same number"):
        assignment.check_manual({0: [1, 2], 1: [1]}, {1, 2})


def test_znode_json_round_trips_as_kafka_writes_it() -> None:
    tid = uuid.uuid4()
    data = znodes.topic_json({1: [2, 3], 0: [1, 2]}, tid)
    assert data.startswith(b'{"version":3,"topic_id":"')
    assert znodes.parse_topic(data) == ({0: [1, 2], 1: [2, 3]}, tid)
    assert len(znodes.topic_id_string(tid)) == 22
    broker = znodes.BrokerInfo(4, "127.0.0.1", 9093, "r1", (("PLAINTEXT", "127.0.0.1", 9093),))
    assert znodes.parse_broker(4, znodes.broker_json(broker)) == broker
    # Every listener with its real security protocol, the client listener first.
    two = znodes.broker_json(
        broker, "CLIENT", [("INTERNAL", "127.0.0.1", 9094)], {"CLIENT": "SASL_SSL"}
    )
    assert znodes.security_protocols(two) == {"CLIENT": "SASL_SSL", "INTERNAL": "INTERNAL"}
    assert znodes.parse_broker(4, two).endpoints == (
        ("CLIENT", "127.0.0.1", 9093),
        ("INTERNAL", "127.0.0.1", 9094),
    )
    state = znodes.LeaderAndIsr(2, 5, [2, 3], 7)
    assert znodes.parse_state(znodes.state_json(state)) == state


def test_private_zookeeper_serves_and_cleans_up(tmp_path: Path) -> None:
    with zookeeper.LocalZooKeeper(tmp_path / "zk") as zk:
        assert zk.connect.startswith("127.0.0.1:")
        client = KazooClient(hosts=zk.connect)
        client.start(timeout=30)
        client.create("/probe", b"x")
        assert client.get("/probe")[0] == b"x"
        client.stop()
        client.close()
    assert zk._proc is None


def test_missing_zookeeper_names_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER_CLASSPATH", raising=False)
    monkeypatch.setattr(zookeeper, "DEBIAN_JAR", tmp_path / "absent.jar")
    with pytest.raises(zookeeper.ZooKeeperNotInstalledError, match="'zookeeper' package"):
        zookeeper.LocalZooKeeper(tmp_path / "zk").start()


def test_an_isr_proposal_made_from_an_isr_that_changed_since_is_not_written(
    tmp_path: Path,
) -> None:
    """A leader's proposal carries the ISR it was made from: one that crossed a newer
    change (here the controller dropped broker 3) must not put 3 back."""
    with zookeeper.LocalZooKeeper(tmp_path / "zk") as zk:
        client = KazooClient(hosts=zk.connect)
        client.start(timeout=30)
        try:
            path = znodes.partition_state_path("t", 0)
            client.create(
                path, znodes.state_json(znodes.LeaderAndIsr(1, 4, [1, 2], 1)), makepath=True
            )
            op = {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 4}
            # Made while the ISR was [1, 2, 3], adding 4: stale.
            stale = {**op, "isr": [1, 2, 3, 4], "from_isr": [1, 2, 3]}
            assert isr.commit_all(client, [stale]) == set()
            assert znodes.parse_state(client.get(path)[0]).isr == [1, 2]
            current = {**op, "isr": [1, 2, 4], "from_isr": [2, 1]}
            # In one burst the last proposal for a partition is the one that counts.
            assert isr.commit_all(client, [stale, current]) == {("t", 0)}
            assert znodes.parse_state(client.get(path)[0]).isr == [1, 2, 4]
        finally:
            client.stop()
            client.close()
