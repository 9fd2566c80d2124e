"""The active controller's work, run whenever ZooKeeper changes (broker up or down, topic
created, grown or marked for deletion): give every new partition its first leader and
ISR, elect a new leader from the live ISR with a new leader epoch when a leader's broker
is gone, drop dead brokers from the ISR, and delete topics queued under
``/admin/delete_topics``. Each partition-state write is compare-and-set on the znode's
version inside a transaction that also checks the controller epoch (see ``election``)."""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from kafkalite.controller import znodes
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


class Controller:
    def __init__(self, zk: KazooClient, broker_id: int, term: Term, unclean: bool) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.term = term
        self.unclean = unclean

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
        for topic in self.zk.get_children(znodes.DELETE_TOPICS):
            self._delete_topic(topic)
        for topic in self.zk.get_children(znodes.TOPICS):
            try:
                data, _ = self.zk.get(znodes.topic_path(topic))
            except NoNodeError:
                continue
            assignment, _topic_id = znodes.parse_topic(data)
            unclean = self._unclean(topic)
            for partition, replicas in sorted(assignment.items()):
                self._partition(topic, partition, replicas, live, unclean)

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
