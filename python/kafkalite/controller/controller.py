"""The active controller's work, run whenever ZooKeeper changes (broker up or down, topic
created, grown or marked for deletion): give every new partition its first leader and
ISR, elect a new leader from the live ISR with a new leader epoch when a leader's broker
is gone, drop dead brokers from the ISR, delete topics queued under
``/admin/delete_topics``, run the leader elections clients ask for
(``/admin/preferred_replica_election``, ``/admin/unclean_leader_election``) and the
periodic preferred-leader rebalance, and drive partition reassignments
(``reassignment``).

It decides from the broker's ``MetadataCache`` (no ZooKeeper read per partition) and
writes what it decided for many partitions at once: batched transactions, each
compare-and-set on every partition state's version and checking the controller epoch
(see ``election``). A write that lost a race has its znode re-read and is decided again
on the next pass."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from kafkalite.controller import leadership, reassignment, znodes
from kafkalite.controller.election import Term
from kafkalite.controller.metadata_cache import MetadataCache, PartitionKey

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


# Operations one ZooKeeper transaction carries: a partition state is ~100 bytes, so a
# batch stays far below the server's 1 MiB request limit (jute.maxbuffer).
BATCH_OPS = 500
# Partition moves named one by one in the log before the rest are only counted.
LOGGED_MOVES = 20


@dataclass(frozen=True)
class _Write:
    key: PartitionKey
    state: znodes.LeaderAndIsr
    # The version the decision was made from; -1 creates the state (a new partition).
    version: int
    before: znodes.LeaderAndIsr | None


class Controller:
    def __init__(
        self,
        zk: KazooClient,
        broker_id: int,
        term: Term,
        unclean: bool,
        cache: MetadataCache,
        wake: Callable[[], None] | None = None,
        rebalance: Rebalance | None = None,
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.term = term
        self.unclean = unclean
        self.cache = cache
        self._wake = wake
        self.rebalance = rebalance or Rebalance()
        self._next_rebalance = time.monotonic() + FIRST_REBALANCE_DELAY_S
        # Set by the watches on the znodes the controller reads itself (the requests
        # under /admin) and when a write lost a race; without it and without a change in
        # the cache since the last pass (whoever read it in: the broker's admin thread
        # reads the ISR its leaders write), a pass only checks the rebalance timer.
        self._again = True
        self._seen_generation = -1
        # Made by every broker at start; here too for a ZooKeeper a broker of an earlier
        # kafkalite set up (without it every new partition's transaction would fail).
        zk.ensure_path(znodes.NEW_STATES)

    def watch(self, _event: Any) -> None:
        """Called by ZooKeeper when a request znode the controller reads changes."""
        self._again = True
        if self._wake is not None:
            self._wake()

    def watch_soon(self) -> None:
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
        """One pass."""
        generation = self.cache.generation
        if generation != self._seen_generation or self._again:
            self._seen_generation = generation
            self._again = False
            live = self.cache.live_brokers()
            for topic in sorted(self.cache.delete_requests):
                self._delete_topic(topic)
            reassignment.take_requests(self, live)
            self._write(self._decide(live))
            with self.cache.lock:
                moving = [
                    (t, e.znode)
                    for t, e in self.cache.topics.items()
                    if e.znode.adding or e.znode.removing
                ]
            for topic, tz in moving:
                reassignment.progress(self, topic, tz, live)
            self._requested_elections(live)
        if self.rebalance.enabled and time.monotonic() >= self._next_rebalance:
            self._next_rebalance = time.monotonic() + self.rebalance.interval_s
            self._auto_rebalance(self.cache.live_brokers())

    def _decide(self, live: set[int]) -> list[_Write]:
        """What every partition's state should become, from the cache alone."""
        writes = []
        epoch = self.term.epoch
        with self.cache.lock:
            for topic, entry in self.cache.topics.items():
                if topic in self.cache.delete_requests:
                    continue
                unclean = self._unclean(entry.configs)
                for p, replicas in entry.znode.assignment.items():
                    read = self.cache.states.get((topic, p))
                    if read is None:
                        alive = [b for b in replicas if b in live]
                        if alive:
                            # A new partition: the first live replica leads, every live
                            # replica is in sync (an empty log has nothing to catch up on).
                            state = znodes.LeaderAndIsr(alive[0], 0, alive, epoch)
                            writes.append(_Write((topic, p), state, -1, None))
                        continue
                    decided = elect_leader(replicas, read.state, live, unclean)
                    if decided is not None:
                        leader, isr = decided
                        state = znodes.LeaderAndIsr(leader, read.state.leader_epoch + 1, isr, epoch)
                        writes.append(_Write((topic, p), state, read.version, read.state))
        return writes

    def _ensure_parents(self, keys: list[PartitionKey]) -> None:
        """``partitions`` and ``partitions/<p>`` under each new partition's topic, created
        pipelined (the state itself goes into the guarded transaction)."""
        for paths in (
            sorted({f"{znodes.topic_path(t)}/partitions" for t, _p in keys}),
            [f"{znodes.topic_path(t)}/partitions/{p}" for t, p in keys],
        ):
            pending = [self.zk.create_async(path, b"") for path in paths]
            for result in pending:
                try:
                    result.get()
                except NodeExistsError:
                    pass
                except NoNodeError:
                    pass  # the topic went meanwhile: its state write fails and is retried

    def _create_fresh(self, creates: list[_Write]) -> list[_Write]:
        """The states of new partitions of topics that have none yet, created in guarded
        transactions together with their parent znodes (a few round trips for a topic of
        thousands of partitions). Returns the writes done; a transaction that fails (a
        parent left by an earlier attempt) leaves the rest to ``_write``'s general path."""
        with self.cache.lock:
            started = {t for t, _p in self.cache.states}
            topic_ids = {t: e.znode.topic_id for t, e in self.cache.topics.items()}
        ops: list[tuple[str, bytes, _Write | None]] = []
        for w in creates:
            topic, p = w.key
            if topic in started:
                continue
            base = f"{znodes.topic_path(topic)}/partitions"
            if not ops or not ops[-1][0].startswith(base + "/"):
                ops.append((base, b"", None))
            ops.append((f"{base}/{p}", b"", None))
            ops.append((znodes.partition_state_path(topic, p), znodes.state_json(w.state), w))
        # Sent pipelined: a chunk that fails (its partitions' parents exist already)
        # wrote nothing, and the others stand on their own.
        chunks = [ops[i : i + BATCH_OPS] for i in range(0, len(ops), BATCH_OPS)]
        pending = []
        for chunk in chunks:
            tx = self.zk.transaction()
            tx.check(znodes.CONTROLLER_EPOCH, self.term.epoch_zk_version)
            for path, data, _w in chunk:
                tx.create(path, data)
            # The same states in one znode for the brokers (znodes.NEW_STATES).
            created = [w for _p, _d, w in chunk if w is not None]
            tx.create(
                f"{znodes.NEW_STATES}/{znodes.NEW_STATES_PREFIX}",
                znodes.new_states_json(
                    [(w.key[0], topic_ids.get(w.key[0]), w.key[1], w.state) for w in created]
                ),
                sequence=True,
            )
            pending.append(tx.commit_async())
        done: list[_Write] = []
        fenced = False
        for chunk, result in zip(chunks, pending, strict=True):
            results = result.get()
            if isinstance(results[0], (BadVersionError, NoNodeError)):
                fenced = True
            if any(isinstance(r, Exception) for r in results):
                continue
            for _path, _data, written in chunk:
                if written is not None:
                    self.cache.put_created(written.key, written.state)
                    done.append(written)
            self._forget_new_states(results[-1])
        if fenced:
            raise Fenced(f"controller epoch {self.term.epoch} is stale")
        return done

    def _forget_new_states(self, created: object) -> None:
        """Delete the ``NEW_STATES`` child ``NEW_STATES_KEPT`` before the one just created
        (not waited for: one left behind is deleted by nobody and harms nobody)."""
        name = str(created).rsplit("/", 1)[-1]
        seq = znodes.new_states_sequence(name)
        if seq is None or seq < znodes.NEW_STATES_KEPT:
            return
        old = seq - znodes.NEW_STATES_KEPT
        digits = len(name) - len(znodes.NEW_STATES_PREFIX)
        self.zk.delete_async(f"{znodes.NEW_STATES}/{znodes.NEW_STATES_PREFIX}{old:0{digits}d}")

    def _write(self, writes: list[_Write]) -> None:
        done = self._create_fresh([w for w in writes if w.version < 0])
        created = {w.key for w in done}
        writes = [w for w in writes if w.key not in created]
        creates = [w.key for w in writes if w.version < 0]
        if creates:
            self._ensure_parents(creates)
        for i in range(0, len(writes), BATCH_OPS):
            chunk = writes[i : i + BATCH_OPS]
            while chunk:
                tx = self.zk.transaction()
                tx.check(znodes.CONTROLLER_EPOCH, self.term.epoch_zk_version)
                for w in chunk:
                    path = znodes.partition_state_path(*w.key)
                    if w.version < 0:
                        tx.create(path, znodes.state_json(w.state))
                    else:
                        tx.set_data(path, znodes.state_json(w.state), version=w.version)
                results = tx.commit()
                if isinstance(results[0], (BadVersionError, NoNodeError)):
                    raise Fenced(f"controller epoch {self.term.epoch} is stale")
                lost = [
                    w
                    for w, r in zip(chunk, results[1:], strict=True)
                    if isinstance(r, Exception) and not isinstance(r, RolledBackError)
                ]
                if not lost:
                    for w, r in zip(chunk, results[1:], strict=True):
                        if w.version < 0:
                            self.cache.put_created(w.key, w.state)
                        else:
                            self.cache.put_state(w.key, w.state, r.version)
                    done += chunk
                    break
                # A race lost (the leader changed the ISR meanwhile, a topic went): read
                # those again and decide them on the next pass; the rest goes now.
                self.cache.mark(znodes.partition_state_path(*w.key) for w in lost)
                self._again = True
                chunk = [w for w in chunk if w not in lost]
        if self._again and self._wake is not None:
            self._wake()
        self._log_moves(done)

    def _log_moves(self, done: list[_Write]) -> None:
        new = [w for w in done if w.before is None]
        moved = [w for w in done if w.before is not None]
        if new:
            topics = sorted({w.key[0] for w in new})
            _log.info("leaders for %d new partition(s) of %s", len(new), ", ".join(topics[:10]))
        for w in moved[:LOGGED_MOVES]:
            assert w.before is not None
            _log.info(
                "%s-%d: leader %d -> %d, epoch %d, isr %s",
                w.key[0],
                w.key[1],
                w.before.leader,
                w.state.leader,
                w.state.leader_epoch,
                w.state.isr,
            )
        if len(moved) > LOGGED_MOVES:
            _log.info("... and %d more partition(s)", len(moved) - LOGGED_MOVES)

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
                self.cache.put_state((topic, partition), new, version + 1)
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

    def _auto_rebalance(self, live: set[int]) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance; partitions being reassigned are
        left alone."""
        partitions = []
        with self.cache.lock:
            for topic, entry in self.cache.topics.items():
                tz = entry.znode
                for p, replicas in tz.assignment.items():
                    if p in tz.adding or p in tz.removing:
                        continue
                    read = self.cache.states.get((topic, p))
                    if read is not None:
                        partitions.append((topic, p, replicas, read.state))
        for topic, p in leadership.rebalance_candidates(
            partitions, live, self.rebalance.percentage
        ):
            self.elect(topic, p, leadership.PREFERRED, live)

    def _unclean(self, configs: dict[str, str]) -> bool:
        value = configs.get("unclean.leader.election.enable")
        return self.unclean if value is None else value.lower() == "true"

    def _delete_topic(self, topic: str) -> None:
        """Kafka's deletion, without StopReplica: brokers delete their replicas when the
        topic leaves the metadata they watch. The partition znodes go pipelined, deepest
        first; then the topic, its config and the request."""
        base = znodes.topic_path(topic)
        try:
            partitions = self.zk.get_children(f"{base}/partitions")
        except NoNodeError:
            partitions = []
        for paths in (
            [f"{base}/partitions/{p}/state" for p in partitions],
            [f"{base}/partitions/{p}" for p in partitions],
            [f"{base}/partitions"] if partitions else [],
        ):
            pending = [self.zk.delete_async(path) for path in paths]
            for result in pending:
                try:
                    result.get()
                except NoNodeError:
                    pass
        for path, recursive in (
            (base, True),
            (znodes.topic_config_path(topic), False),
            (f"{znodes.DELETE_TOPICS}/{topic}", False),
        ):
            try:
                self.zk.delete(path, recursive=recursive)
            except NoNodeError:
                pass
        with self.cache.lock:
            self.cache.delete_requests.discard(topic)
        _log.info("deleted topic %s", topic)
