"""Partition reassignment as Kafka's ZooKeeper-mode controller ran it
(``KafkaController.onPartitionReassignment``), with ORS the original replicas and TRS
the target ones:

1. start: the assignment becomes RS = TRS + (ORS - TRS), the topic znode records
   adding = TRS - ORS and removing = ORS - TRS, the leader epoch goes up so every
   replica (new ones included) learns the new replica set;
2. wait until TRS is a subset of the ISR -- the leader adds a replica to the ISR once it
   has caught up;
3. finish: if the leader is not in TRS (or dead), a new leader from TRS and the ISR; the
   ISR loses the removed replicas; the leader epoch goes up; RS = TRS; adding and
   removing are cleared. Leader, ISR and assignment change in one ZooKeeper transaction.

Cancelling (null target) puts ORS back the same way. Requests arrive in
``/admin/reassign_partitions``; the controller takes them, starts each and deletes the
znode."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from typing import Any, Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalite.controller import znodes
from kafkalite.controller.election import Term


class Controller(Protocol):
    """What the reassignment steps need of ``controller.Controller`` (named here so the
    two modules do not import each other)."""

    zk: KazooClient
    term: Term
    watch: Callable[[Any], None] | None

    def commit(self, build: object) -> bool: ...

    def watch_soon(self) -> None: ...


_log = logging.getLogger("kafkalite.controller")

# Until the replication data path exists no leader ever adds a caught-up replica to the
# ISR, so the controller does it for live new replicas itself (nothing is replicated yet,
# so there is nothing to catch up on). The replication side brings the leader's ISR
# updates (``controller.isr``); with it, step 2 waits for the leader for real.
ASSUME_NEW_REPLICAS_IN_SYNC = importlib.util.find_spec("kafkalite.controller.isr") is None


def origin_replicas(replicas: list[int], adding: list[int]) -> list[int]:
    return [r for r in replicas if r not in adding]


def target_replicas(replicas: list[int], removing: list[int]) -> list[int]:
    return [r for r in replicas if r not in removing]


def take_requests(ctl: Controller, live: set[int]) -> None:
    """Start (or cancel) every reassignment queued in ``/admin/reassign_partitions``."""
    zk = ctl.zk
    try:
        data, _ = zk.get(znodes.REASSIGN_PARTITIONS, watch=ctl.watch)
    except NoNodeError:
        zk.exists(znodes.REASSIGN_PARTITIONS, watch=ctl.watch)
        return
    for topic, partition, target in znodes.parse_reassignment(data):
        for _attempt in range(5):
            if _start(ctl, topic, partition, target, live):
                break
    try:
        zk.delete(znodes.REASSIGN_PARTITIONS)
    except NoNodeError:
        pass


def _read(ctl: Controller, topic: str, partition: int):  # type: ignore[no-untyped-def]
    """(topic znode, its version, partition state, its version) or None."""
    try:
        tdata, tstat = ctl.zk.get(znodes.topic_path(topic))
        sdata, sstat = ctl.zk.get(znodes.partition_state_path(topic, partition))
    except NoNodeError:
        return None
    tz = znodes.parse_topic_znode(tdata)
    if partition not in tz.assignment:
        return None
    return tz, tstat.version, znodes.parse_state(sdata), sstat.version


def _write(
    ctl: Controller,
    topic: str,
    partition: int,
    tz: znodes.TopicZNode,
    tversion: int,
    state: znodes.LeaderAndIsr,
    sversion: int,
) -> bool:
    spath = znodes.partition_state_path(topic, partition)

    def build(tx):  # type: ignore[no-untyped-def]
        tx.set_data(znodes.topic_path(topic), tz.to_json(), version=tversion)
        tx.set_data(spath, znodes.state_json(state), version=sversion)

    return ctl.commit(build)


def _start(
    ctl: Controller, topic: str, partition: int, target: list[int] | None, live: set[int]
) -> bool:
    """False when a concurrent write won (the caller retries)."""
    read = _read(ctl, topic, partition)
    if read is None:
        return True
    tz, tversion, state, sversion = read
    current = tz.assignment[partition]
    adding = tz.adding.get(partition, [])
    origin = origin_replicas(current, adding)
    if target is None:
        if not adding and not tz.removing.get(partition):
            return True
        target = origin
        cancelling = True
    else:
        cancelling = False
    if cancelling:
        # Back to ORS at once: the added replicas never were part of the partition.
        return _finish(ctl, topic, partition, tz, tversion, state, sversion, origin, live)
    rs = list(dict.fromkeys(target + origin))
    tz.assignment[partition] = rs
    tz.adding[partition] = [r for r in target if r not in origin]
    tz.removing[partition] = [r for r in origin if r not in target]
    if not tz.adding[partition] and not tz.removing[partition]:
        tz.assignment[partition] = target
    new_state = znodes.LeaderAndIsr(state.leader, state.leader_epoch + 1, state.isr, ctl.term.epoch)
    if not _write(ctl, topic, partition, tz, tversion, new_state, sversion):
        return False
    _log.info("%s-%d: reassigning %s -> %s (replicas %s)", topic, partition, origin, target, rs)
    return True


def _finish(
    ctl: Controller,
    topic: str,
    partition: int,
    tz: znodes.TopicZNode,
    tversion: int,
    state: znodes.LeaderAndIsr,
    sversion: int,
    final: list[int],
    live: set[int],
) -> bool:
    isr = [r for r in state.isr if r in final]
    leader = state.leader
    if leader not in final or leader not in live:
        leader = next((r for r in final if r in isr and r in live), -1)
    if not isr:
        # No replica of the final set is in sync (a cancellation after the whole ORS
        # died): keep the partition leaderless rather than invent an ISR.
        isr = [leader] if leader >= 0 else state.isr
    tz.assignment[partition] = final
    tz.adding.pop(partition, None)
    tz.removing.pop(partition, None)
    new_state = znodes.LeaderAndIsr(leader, state.leader_epoch + 1, isr, ctl.term.epoch)
    if not _write(ctl, topic, partition, tz, tversion, new_state, sversion):
        return False
    _log.info("%s-%d: replicas now %s, leader %d, isr %s", topic, partition, final, leader, isr)
    return True


def progress(ctl: Controller, topic: str, tz: znodes.TopicZNode, live: set[int]) -> None:
    """Move on every ongoing reassignment of ``topic`` whose new replicas are in sync."""
    for partition in sorted(set(tz.adding) | set(tz.removing)):
        read = _read(ctl, topic, partition)
        if read is None:
            continue
        fresh, tversion, state, sversion = read
        rs = fresh.assignment[partition]
        adding = fresh.adding.get(partition, [])
        removing = fresh.removing.get(partition, [])
        if not adding and not removing:
            continue
        trs = target_replicas(rs, removing)
        if not set(trs) <= set(state.isr):
            if ASSUME_NEW_REPLICAS_IN_SYNC:
                joined = [r for r in trs if r in live and r not in state.isr]
                if joined and state.leader in live:
                    grown = znodes.LeaderAndIsr(
                        state.leader, state.leader_epoch, state.isr + joined, ctl.term.epoch
                    )
                    spath = znodes.partition_state_path(topic, partition)
                    ctl.commit(
                        lambda tx, s=grown, v=sversion, p=spath: tx.set_data(
                            p, znodes.state_json(s), version=v
                        )
                    )
                    ctl.watch_soon()
            continue
        _finish(ctl, topic, partition, fresh, tversion, state, sversion, trs, live)
