"""The active controller's work, run whenever ZooKeeper changes (broker up or down, topic
created, grown or marked for deletion): give every new partition its first leader and
ISR, elect a new leader from the live ISR with a new leader epoch when a leader's broker
is gone, drop dead brokers from the ISR, delete topics queued under
``/admin/delete_topics``, run the leader elections clients ask for
(``/admin/preferred_replica_election``, ``/admin/unclean_leader_election``) and the
periodic preferred-leader rebalance, and drive partition reassignments
(``reassignment``). Each partition-state write is compare-and-set on the znode's
version inside a transaction that also checks the controller epoch (see ``election``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from kafkalite.controller import leadership, reassignment, znodes
from kafkalite.controller.election import Term

_log = logging.getLogger("kafkalite.controller")


class Fenced(Exception):
    """Another controller holds a newer epoch: this one must stop acting."""


def elect_leader(
    replicas: list[int], state: znodes.LeaderAndIsr, live: set[int], unclean: bool
) -> tuple[int, list[int]] | None:
    """(leader, isr) the partition should have now, None when it should stay as it is.

    Kafka's offline-partition election: the first replica in assignment order that is
    alive and in the ISR; with none, a live replica outside the ISR only if unclean
    election is enabled (it may lack acknowledged data); else no leader (-1), ISR kept.
    """
    live_isr = [b for b in state.isr if b in live]
    if state.leader in live:
        if live_isr != state.isr:
            return state.leader, live_isr
        return None
    for b in replicas:
        if b in live_isr:
            return b, live_isr
    if unclean:
        for b in replicas:
            if b in live:
                return b, [b]
    if state.leader == -1:
        return None
    return -1, state.isr


@dataclass(frozen=True)
class Rebalance:
    """``auto.leader.rebalance.enable`` and its two knobs (Kafka's defaults)."""

    enabled: bool = True
    interval_s: float = 300.0
    percentage: int = 10

    @classmethod
    def from_settings(cls, settings: dict[str, str]) -> Rebalance:
        return cls(
            settings.get("auto.leader.rebalance.enable", "true").lower() == "true",
            float(settings.get("leader.imbalance.check.interval.seconds", "300")),
            int(settings.get("leader.imbalance.per.broker.percentage", "10")),
        )


# Kafka's first rebalance check comes 5 s after a controller takes office.
FIRST_REBALANCE_DELAY_S = 5.0


class Controller:
    def __init__(
        self,
        zk: KazooClient,
        broker_id: int,
        term: Term,
        unclean: bool,
        watch: Callable[[Any], None] | None = None,
        rebalance: Rebalance | None = None,
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.term = term
        self.unclean = unclean
        # Called by ZooKeeper when a znode the controller waits on changes; also to ask
        # for another pass soon.
        self.watch = watch
        self.rebalance = rebalance or Rebalance()
        self._next_rebalance = time.monotonic() + FIRST_REBALANCE_DELAY_S

    def watch_soon(self) -> None:
        if self.watch is not None:
            self.watch(None)

    def commit(self, build: object) -> bool:
        return self._commit(build)

    def _commit(self, build: object) -> bool:
        """Run a transaction guarded by the controller epoch. False when its own CAS lost
        (retried on the next pass); Fenced when the epoch moved on."""
        tx = self.zk.transaction()
        tx.check(znodes.CONTROLLER_EPOCH, self.term.epoch_zk_version)
        build(tx)  # type: ignore[operator]
        results = tx.commit()
        if isinstance(results[0], (BadVersionError, NoNodeError)):
            raise Fenced(f"controller epoch {self.term.epoch} is stale")
        return not any(isinstance(r, Exception) for r in results[1:])

    def reconcile(self) -> None:
        live = {int(c) for c in self.zk.get_children(znodes.BROKER_IDS)}
        for topic in self.zk.get_children(znodes.DELETE_TOPICS, watch=self.watch):
            self._delete_topic(topic)
        reassignment.take_requests(self, live)
        topics: dict[str, znodes.TopicZNode] = {}
        for topic in self.zk.get_children(znodes.TOPICS):
            try:
                data, _ = self.zk.get(znodes.topic_path(topic))
            except NoNodeError:
                continue
            tz = znodes.parse_topic_znode(data)
            topics[topic] = tz
            unclean = self._unclean(topic)
            for partition, replicas in sorted(tz.assignment.items()):
                self._partition(topic, partition, replicas, live, unclean)
            if tz.adding or tz.removing:
                reassignment.progress(self, topic, tz, live)
        self._requested_elections(live)
        if self.rebalance.enabled and time.monotonic() >= self._next_rebalance:
            self._next_rebalance = time.monotonic() + self.rebalance.interval_s
            self._auto_rebalance(topics, live)

    def _state(self, topic: str, partition: int) -> tuple[znodes.LeaderAndIsr, int] | None:
        try:
            data, stat = self.zk.get(znodes.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return znodes.parse_state(data), stat.version

    def _replicas(self, topic: str, partition: int) -> list[int] | None:
        try:
            data, _ = self.zk.get(znodes.topic_path(topic))
        except NoNodeError:
            return None
        return znodes.parse_topic(data)[0].get(partition)

    def elect(self, topic: str, partition: int, kind: int, live: set[int]) -> None:
        """One preferred or unclean election (ElectLeaders, the rebalance); retried when
        a concurrent write to the partition state wins."""
        for _attempt in range(5):
            replicas = self._replicas(topic, partition)
            read = self._state(topic, partition)
            if replicas is None or read is None:
                return
            state, version = read
            if kind == leadership.PREFERRED:
                leader, error = leadership.preferred_choice(replicas, state, live)
                isr = state.isr
            else:
                leader, isr, error = leadership.unclean_choice(replicas, state, live)
            if error is not None:
                return
            new = znodes.LeaderAndIsr(leader, state.leader_epoch + 1, isr, self.term.epoch)
            path = znodes.partition_state_path(topic, partition)
            if self._commit(
                lambda tx, p=path, s=new, v=version: tx.set_data(p, znodes.state_json(s), version=v)
            ):
                _log.info(
                    "%s-%d: %s election, leader %d -> %d, epoch %d",
                    topic,
                    partition,
                    "preferred" if kind == leadership.PREFERRED else "unclean",
                    state.leader,
                    leader,
                    new.leader_epoch,
                )
                return

    def _requested_elections(self, live: set[int]) -> None:
        for path, kind in (
            (znodes.PREFERRED_ELECTION, leadership.PREFERRED),
            (znodes.UNCLEAN_ELECTION, leadership.UNCLEAN),
        ):
            try:
                data, _ = self.zk.get(path, watch=self.watch)
            except NoNodeError:
                self.zk.exists(path, watch=self.watch)
                continue
            for topic, partition in znodes.parse_partitions(data):
                self.elect(topic, partition, kind, live)
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass

    def _auto_rebalance(self, topics: dict[str, znodes.TopicZNode], live: set[int]) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance; partitions being reassigned are
        left alone."""
        partitions = []
        for topic, tz in topics.items():
            for p, replicas in tz.assignment.items():
                if p in tz.adding or p in tz.removing:
                    continue
                read = self._state(topic, p)
                if read is not None:
                    partitions.append((topic, p, replicas, read[0]))
        for topic, p in leadership.rebalance_candidates(
            partitions, live, self.rebalance.percentage
        ):
            self.elect(topic, p, leadership.PREFERRED, live)

    def _unclean(self, topic: str) -> bool:
        try:
            data, _ = self.zk.get(znodes.topic_config_path(topic))
        except NoNodeError:
            return self.unclean
        value = znodes.parse_config(data).get("unclean.leader.election.enable")
        return self.unclean if value is None else value.lower() == "true"

    def _partition(
        self, topic: str, partition: int, replicas: list[int], live: set[int], unclean: bool
    ) -> None:
        path = znodes.partition_state_path(topic, partition)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            alive = [b for b in replicas if b in live]
            if not alive:
                return
            # A new partition: the first live replica leads, every live replica is in
            # sync (an empty log has nothing to catch up on).
            state = znodes.LeaderAndIsr(alive[0], 0, alive, self.term.epoch)
            self.zk.ensure_path(path.rsplit("/", 1)[0])
            if not self._commit(lambda tx: tx.create(path, znodes.state_json(state))):
                return
            _log.info("%s-%d: leader %d, isr %s (new)", topic, partition, alive[0], alive)
            return
        state = znodes.parse_state(data)
        decided = elect_leader(replicas, state, live, unclean)
        if decided is None:
            return
        leader, isr = decided
        new = znodes.LeaderAndIsr(leader, state.leader_epoch + 1, isr, self.term.epoch)
        if self._commit(lambda tx: tx.set_data(path, znodes.state_json(new), version=stat.version)):
            _log.info(
                "%s-%d: leader %d -> %d, epoch %d, isr %s",
                topic,
                partition,
                state.leader,
                leader,
                new.leader_epoch,
                isr,
            )

    def _delete_topic(self, topic: str) -> None:
        """Kafka's deletion, without StopReplica: brokers delete their replicas when the
        topic leaves the metadata they watch."""
        for path, recursive in (
            (znodes.topic_path(topic), True),
            (znodes.topic_config_path(topic), False),
            (f"{znodes.DELETE_TOPICS}/{topic}", False),
        ):
            try:
                self.zk.delete(path, recursive=recursive)
            except NoNodeError:
                pass
        _log.info("deleted topic %s", topic)
