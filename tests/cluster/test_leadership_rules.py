"""The leader-choice rules behind ElectLeaders and the auto rebalance, and the znode JSON
of reassignments and producer-id blocks (pure functions, no processes)."""

from __future__ import annotations

import json
import uuid

from kafkalite.controller import leadership, znodes
from kafkalite.controller.reassignment import origin_replicas, target_replicas


def state(leader: int, isr: list[int], epoch: int = 3) -> znodes.LeaderAndIsr:
    return znodes.LeaderAndIsr(leader, epoch, isr, 1)


def test_preferred_election_needs_the_first_replica_alive_and_in_sync() -> None:
    live = {1, 2, 3}
    assert leadership.preferred_choice([1, 2, 3], state(2, [1, 2, 3]), live) == (1, None)
    assert leadership.preferred_choice([1, 2, 3], state(1, [1, 2]), live) == (
        -1,
        "ELECTION_NOT_NEEDED",
    )
    assert leadership.preferred_choice([1, 2, 3], state(2, [2, 3]), live)[1] == (
        "PREFERRED_LEADER_NOT_AVAILABLE"
    )
    assert leadership.preferred_choice([1, 2, 3], state(2, [1, 2]), {2, 3})[1] == (
        "PREFERRED_LEADER_NOT_AVAILABLE"
    )


def test_unclean_election_prefers_the_isr_then_any_live_replica() -> None:
    assert leadership.unclean_choice([1, 2, 3], state(1, [1]), {1, 2})[2] == ("ELECTION_NOT_NEEDED")
    assert leadership.unclean_choice([1, 2, 3], state(-1, [3, 1]), {2, 3}) == (3, [3], None)
    # No live ISR member: the first live replica, alone in the ISR.
    assert leadership.unclean_choice([1, 2, 3], state(-1, [1]), {2, 3}) == (2, [2], None)
    assert leadership.unclean_choice([1, 2], state(-1, [1]), {3}) == (
        -1,
        [],
        "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    )


def test_rebalance_moves_leaders_back_only_past_the_imbalance_threshold() -> None:
    # Broker 1 is preferred for 4 partitions and leads 3: 25 % imbalance.
    parts = [
        ("t", 0, [1, 2], state(1, [1, 2])),
        ("t", 1, [1, 2], state(1, [1, 2])),
        ("t", 2, [1, 2], state(1, [1, 2])),
        ("t", 3, [1, 2], state(2, [1, 2])),
        # Preferred broker 2 is out of sync here: never a candidate.
        ("u", 0, [2, 1], state(1, [1])),
    ]
    assert leadership.rebalance_candidates(parts, {1, 2}, 10) == [("t", 3)]
    assert leadership.rebalance_candidates(parts, {1, 2}, 25) == []
    assert leadership.rebalance_candidates(parts, {2}, 10) == []


def test_reassignment_sets_and_znode_json_round_trip() -> None:
    # ORS [1,2,3] -> TRS [3,4,5]: RS [3,4,5,1,2], adding [4,5], removing [1,2].
    rs, adding, removing = [3, 4, 5, 1, 2], [4, 5], [1, 2]
    assert origin_replicas(rs, adding) == [3, 1, 2]
    assert target_replicas(rs, removing) == [3, 4, 5]
    tid = uuid.uuid4()
    data = znodes.topic_json({0: rs, 1: [1, 2]}, tid, {0: adding}, {0: removing, 1: []})
    d = json.loads(data)
    assert d["adding_replicas"] == {"0": [4, 5]} and d["removing_replicas"] == {"0": [1, 2]}
    tz = znodes.parse_topic_znode(data)
    assert (tz.assignment, tz.topic_id, tz.adding, tz.removing) == (
        {0: rs, 1: [1, 2]},
        tid,
        {0: adding},
        {0: removing},
    )
    moves = [("t", 0, [3, 4, 5]), ("t", 1, None)]
    assert znodes.parse_reassignment(znodes.reassignment_json(moves)) == moves
    assert znodes.parse_partitions(znodes.partitions_json([("t", 2)])) == [("t", 2)]
    block = json.loads(znodes.producer_id_block_json(2, 1000, 1999))
    assert block == {"version": 1, "broker": 2, "block_start": "1000", "block_end": "1999"}
    assert znodes.parse_producer_id_block(znodes.producer_id_block_json(2, 0, 999)) == (0, 999)
