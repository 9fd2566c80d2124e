"""How long a group of three confluent-kafka consumers takes to become stable (reported,
with a generous bound; bench/group_stable.py measures it with Kafka's default delay too)."""

from __future__ import annotations

import time

from kafkalite import Broker
from tests.groups.members import Member, create_topic, split_evenly, wait_for


def test_three_consumers_become_stable_quickly(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "stable")
    started = time.monotonic()
    members = [Member(bs, "stable", "trio", "confluent") for _ in range(3)]
    try:
        wait_for(lambda: split_evenly(members), 30, "three members to split the partitions")
        took = time.monotonic() - started
        print(f"\ngroup of 3 confluent-kafka consumers stable after {took:.2f}s")
        assert took < 15
    finally:
        for m in members:
            m.stop()
