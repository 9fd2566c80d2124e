"""Consumer groups of real clients, each member in its own process: partitions split with
every record consumed exactly once, rebalances when members leave or die, and
cooperative-sticky, range and roundrobin assignments passed through the coordinator."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from kafkalite import Broker
from tests.groups.members import (
    PARTITIONS,
    Member,
    create_topic,
    produce,
    split_evenly,
    values_of,
    wait_for,
)


def stop_all(members: list[Member]) -> None:
    for m in members:
        m.stop()


@pytest.mark.parametrize(
    ("client", "assignor", "n"),
    [
        ("confluent", "range", 1),
        ("confluent", "roundrobin", 2),
        ("confluent", "range", 3),
        ("confluent", "cooperative-sticky", 3),
        ("kafka-python", "range", 1),
        ("kafka-python", "range", 2),
        ("kafka-python", "roundrobin", 3),
    ],
)
def test_group_consumes_every_record_exactly_once(
    broker: Broker, client: str, assignor: str, n: int
) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "orders")
    members = [Member(bs, "orders", "g", client, assignor=assignor) for _ in range(n)]
    try:
        wait_for(lambda: split_evenly(members), 30, f"{n} members to split the partitions")
        sent = produce(bs, "orders", 600)
        wait_for(lambda: len(values_of(members)) >= 600, 30, "every record")
        time.sleep(0.5)  # anything extra would show up now
        got = Counter(values_of(members))
        assert set(got) == sent
        assert max(got.values()) == 1, "a record was consumed twice"
        for m in members:
            # Each member consumed only from partitions it was assigned. (Clients may
            # rebalance again on their own, e.g. kafka-python's leader once its metadata
            # arrives, so this is every partition it ever owned.)
            assert {p for p, _ in m.records} <= m.ever_assigned
    finally:
        stop_all(members)


def test_mixed_clients_share_a_group(broker: Broker) -> None:
    """librdkafka and kafka-python members in one group agree on the range assignor."""
    bs = broker.bootstrap_servers
    create_topic(bs, "mixed")
    members = [Member(bs, "mixed", "mix", "confluent"), Member(bs, "mixed", "mix", "kafka-python")]
    try:
        wait_for(lambda: split_evenly(members), 30, "both clients to own partitions")
        sent = produce(bs, "mixed", 120)
        wait_for(lambda: len(values_of(members)) >= 120, 30, "every record")
        assert Counter(values_of(members)) == Counter(sent)
    finally:
        stop_all(members)


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_a_member_leaving_rebalances_and_leaves_no_partition_unowned(
    broker: Broker, client: str
) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "jobs")
    members = [Member(bs, "jobs", "workers", client) for _ in range(3)]
    try:
        wait_for(lambda: split_evenly(members), 30, "three members to split the partitions")
        produce(bs, "jobs", 300)
        wait_for(lambda: len(values_of(members)) >= 300, 30, "the first records")
        leaving = members.pop()
        started = time.monotonic()
        leaving.stop()
        assert leaving.of("closed")
        wait_for(lambda: split_evenly(members), 20, "the two left to take over")
        # A clean leave rebalances at once, without waiting for the 6 s session timeout.
        assert time.monotonic() - started < 5.5
        sent = produce(bs, "jobs", 300, start=300)
        wait_for(lambda: sent <= set(values_of(members)), 30, "records of every partition")
    finally:
        stop_all(members)


def test_a_killed_member_loses_its_partitions_after_the_session_timeout(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "events")
    survivor = Member(bs, "events", "crashy", "confluent", session_ms=6000)
    victim = Member(bs, "events", "crashy", "confluent", session_ms=6000)
    try:
        wait_for(lambda: split_evenly([survivor, victim]), 30, "two members to split")
        lost = victim.assignment
        victim.kill()  # SIGKILL: no LeaveGroup, its session must expire
        killed_at = time.monotonic()
        wait_for(
            lambda: survivor.assignment == set(range(PARTITIONS)), 25, "the survivor to own all"
        )
        took = time.monotonic() - killed_at
        assert 5.0 <= took <= 6.0 + 8.0, f"reassigned after {took:.1f}s, session timeout 6s"
        sent = produce(bs, "events", 120)
        wait_for(lambda: sent <= set(values_of([survivor])), 30, "records of the lost partitions")
        assert lost <= {p for p, _ in survivor.records}
    finally:
        victim.kill()
        survivor.stop()


def test_a_static_member_restarting_keeps_its_partitions(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "static")
    other = Member(bs, "static", "st", "confluent", instance_id="other")
    first = Member(bs, "static", "st", "confluent", instance_id="me", session_ms=10000)
    try:
        wait_for(lambda: split_evenly([other, first]), 30, "two static members to split")
        mine, theirs = first.assignment, other.assignment
        revocations_before = len(other.of("assigned"))
        first.stop()  # static members do not send LeaveGroup: the group does not rebalance
        again = Member(bs, "static", "st", "confluent", instance_id="me", session_ms=10000)
        try:
            wait_for(lambda: again.assignment, 20, "the restarted member's assignment")
            assert again.assignment == mine
            assert other.assignment == theirs
            assert len(other.of("assigned")) == revocations_before, "no rebalance happened"
        finally:
            again.stop()
    finally:
        other.stop()
