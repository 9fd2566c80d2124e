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


def commit(zk: KazooClient, op: dict[str, Any]) -> bool:
    """Write the proposed ISR if the proposal is still current. True when written."""
    topic, partition = op["topic"], int(op["partition"])
    path = znodes.partition_state_path(topic, partition)
    try:
        data, stat = zk.get(path)
    except NoNodeError:
        return False
    state = znodes.parse_state(data)
    isr = [int(b) for b in op["isr"]]
    if state.leader != op["leader"] or state.leader_epoch != op["leader_epoch"]:
        return False
    if state.isr == isr:
        return True
    if set(state.isr) != {int(b) for b in op["from_isr"]}:
        return False  # made from an ISR that has changed since: stale
    new = znodes.LeaderAndIsr(state.leader, state.leader_epoch, isr, state.controller_epoch)
    try:
        zk.set(path, znodes.state_json(new), version=stat.version)
    except (BadVersionError, NoNodeError):
        return False
    _log.info("%s-%d: isr %s -> %s (leader %d)", topic, partition, state.isr, isr, state.leader)
    return True
