"""Leader choices beyond a dead leader's replacement (that one is
``controller.elect_leader``): preferred-replica election, unclean election on request
(ElectLeaders), and the imbalance check behind ``auto.leader.rebalance.enable``. Pure
functions of the assignment, the partition state and the live brokers, so the admin side
can pre-check what the controller will do and tests can cover the rules directly."""

from __future__ import annotations

from collections.abc import Iterable

from kafkalite.controller import znodes

# ElectLeaders' election types.
PREFERRED = 0
UNCLEAN = 1


def preferred_choice(
    replicas: list[int], state: znodes.LeaderAndIsr, live: set[int]
) -> tuple[int, str | None]:
    """(new leader, None) to elect, or (-1, Kafka error name) when no election happens:
    the preferred replica (first of the assignment) must be alive and in the ISR."""
    preferred = replicas[0] if replicas else -1
    if state.leader == preferred:
        return -1, "ELECTION_NOT_NEEDED"
    if preferred not in live or preferred not in state.isr:
        return -1, "PREFERRED_LEADER_NOT_AVAILABLE"
    return preferred, None


def unclean_choice(
    replicas: list[int], state: znodes.LeaderAndIsr, live: set[int]
) -> tuple[int, list[int], str | None]:
    """(new leader, new ISR, None), or (-1, [], error name). Only a partition without a
    live leader gets one: from the live ISR if it has a member, else any live replica
    (the caller asked for unclean election, whatever the topic's setting)."""
    if state.leader in live:
        return -1, [], "ELECTION_NOT_NEEDED"
    live_isr = [b for b in state.isr if b in live]
    for b in replicas:
        if b in live_isr:
            return b, live_isr, None
    for b in replicas:
        if b in live:
            return b, [b], None
    return -1, [], "ELIGIBLE_LEADERS_NOT_AVAILABLE"


def rebalance_candidates(
    partitions: Iterable[tuple[str, int, list[int], znodes.LeaderAndIsr]],
    live: set[int],
    percentage: int,
) -> list[tuple[str, int]]:
    """Kafka's auto leader rebalance: for each broker, the share of the partitions it is
    preferred for that someone else leads; where that share exceeds ``percentage`` %,
    those partitions go back to it if it is alive and in their ISR."""
    preferred_of: dict[int, list[tuple[str, int, znodes.LeaderAndIsr]]] = {}
    for topic, p, replicas, state in partitions:
        if replicas:
            preferred_of.setdefault(replicas[0], []).append((topic, p, state))
    out: list[tuple[str, int]] = []
    for broker, owned in sorted(preferred_of.items()):
        if broker not in live:
            continue
        elsewhere = [(t, p, s) for t, p, s in owned if s.leader != broker]
        if len(elsewhere) * 100 <= percentage * len(owned):
            continue
        out.extend((t, p) for t, p, s in elsewhere if broker in s.isr)
    return sorted(out)
