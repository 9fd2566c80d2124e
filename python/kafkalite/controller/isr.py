"""ISR changes proposed by a partition's leader (the Rust replication side: a follower
fell behind for ``replica.lag.time.max.ms``, or caught up again), committed as Kafka's
ZooKeeper mode did (``Partition.updateIsr`` -> ``ReplicationUtils.updateLeaderAndIsr``):
the leader rewrites the partition state znode with a compare-and-set on its version, only
while the znode still names it leader in the same leader epoch and still has the ISR the
proposal was made from (what Kafka's partition epoch checks). A lost race (the
controller moved leadership, or changed the ISR meanwhile) drops the proposal. Either way
the broker's admin loop pushes a fresh snapshot and then answers the leader, which
proposes again if it still needs to (``ClusterNode._answer_isr_proposals``). Every
broker watches the state znode, so the new ISR reaches all of them as a snapshot (so no
``/isr_change_notification`` is needed: nothing would consume it)."""

from __future__ import annotations

import logging
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from kafkalite.controller import znodes

_log = logging.getLogger("kafkalite.replication")


def _decide(op: dict[str, Any], state: znodes.LeaderAndIsr) -> znodes.LeaderAndIsr | bool:
    """The state to write for proposal ``op``; True when the ISR already is the proposed
    one, False when the proposal is stale."""
    isr = [int(b) for b in op["isr"]]
    if state.leader != op["leader"] or state.leader_epoch != op["leader_epoch"]:
        return False
    if state.isr == isr:
        return True
    if set(state.isr) != {int(b) for b in op["from_isr"]}:
        return False  # made from an ISR that has changed since: stale
    return znodes.LeaderAndIsr(state.leader, state.leader_epoch, isr, state.controller_epoch)


def commit_all(zk: KazooClient, ops: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """Write each proposed ISR whose proposal is still current; the partitions whose
    ISR is now the proposed one. A burst (a broker back after a restart is proposed for
    the ISR of thousands of partitions) has its reads go together, then its writes,
    instead of two round trips each one after another. Of several proposals for one
    partition only the last counts (a leader's resend replaces its unanswered copies)."""
    latest = {(op["topic"], int(op["partition"])): op for op in ops}
    paths = {key: znodes.partition_state_path(*key) for key in latest}
    reads = [(key, zk.get_async(paths[key])) for key in latest]
    writes = []
    done: set[tuple[str, int]] = set()
    for key, result in reads:
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        state = znodes.parse_state(data)
        new = _decide(latest[key], state)
        if new is True:
            done.add(key)
        if isinstance(new, bool):
            continue
        write = zk.set_async(paths[key], znodes.state_json(new), version=stat.version)
        writes.append((key, state, new, write))
    for (topic, partition), state, new, write in writes:
        try:
            write.get()
        except (BadVersionError, NoNodeError):
            continue
        done.add((topic, partition))
        _log.info(
            "%s-%d: isr %s -> %s (leader %d)", topic, partition, state.isr, new.isr, state.leader
        )
    return done
