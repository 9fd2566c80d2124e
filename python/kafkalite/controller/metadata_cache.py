"""Every broker's copy of the cluster metadata in ZooKeeper, kept by watches.

ZooKeeper names the znode a watch fired for; the cache re-reads only that znode (and for
a list, the members that came or went), so keeping up costs O(changes), not
O(partitions): an idle cluster's brokers read nothing. Reads are pipelined (kazoo's async
calls), so loading 10,000 partition states costs a few round trips, not 10,000. The same
copy serves the controller (who leads, who is in sync: a broker taking the controller's
seat has the state loaded already) and the snapshot the Rust broker serves Metadata from.

A watch fires once and is re-armed by the read that follows it. A new session (the old
one expired, taking its watches along) reloads everything; nothing re-reads on a timer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import Callback, ZnodeStat

from kafkalite.controller import znodes

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class Registration:
    """A broker's znode under ``/brokers/ids`` and the session that owns it."""

    info: znodes.BrokerInfo
    session: int
    data: bytes


@dataclass
class TopicEntry:
    znode: znodes.TopicZNode
    version: int
    configs: dict[str, str]


@dataclass(frozen=True)
class PartitionState:
    state: znodes.LeaderAndIsr
    version: int


def partitions_topic(path: str) -> str | None:
    """``/brokers/topics/<t>/partitions`` -> t."""
    parts = path.split("/")
    if len(parts) == 5 and parts[4] == "partitions":
        return parts[3]
    return None


def state_key(path: str) -> PartitionKey | None:
    """``/brokers/topics/<t>/partitions/<p>/state`` -> (t, p)."""
    parts = path.split("/")
    if len(parts) == 7 and parts[4] == "partitions" and parts[6] == "state":
        try:
            return parts[3], int(parts[5])
        except ValueError:
            return None
    return None


class MetadataCache:
    """``on_change`` is called (on kazoo's thread) whenever a watched znode changes; the
    owner then calls ``refresh`` from its own thread."""

    def __init__(self, zk: KazooClient, on_change: Callable[[], None]) -> None:
        self.zk = zk
        self._on_change = on_change
        self._dirty_lock = threading.Lock()
        self._dirty: set[str] = set()
        # Held while the cache changes and while a reader walks it.
        self.lock = threading.RLock()
        self.session: int | None = None
        self.cluster_id = ""
        self.controller: tuple[int, int] | None = None
        self.brokers: dict[int, Registration] = {}
        self.topics: dict[str, TopicEntry] = {}
        self.states: dict[PartitionKey, PartitionState] = {}
        self.delete_requests: set[str] = set()
        # Bumped by every change, so readers can tell whether to push a snapshot again.
        self.generation = 0
        # Partitions just learnt of whose states are not read nor watched yet: a
        # controller's ``refresh(defer_new=True)`` leaves them to ``watch_new``, so it
        # decides (and creates those states) before that round trip per partition.
        self._unwatched: set[PartitionKey] = set()
        # The newest ``NEW_STATES`` child read (or there at the last reload).
        self._new_states_seen = -1

    # -- watches ---------------------------------------------------------------------

    def _watched(self, event: Any) -> None:
        path = getattr(event, "path", None)
        if path is None:
            return
        with self._dirty_lock:
            self._dirty.add(path)
        self._on_change()

    def mark(self, paths: Iterable[str]) -> None:
        """Re-read these znodes on the next ``refresh`` (a write of ours lost a race)."""
        with self._dirty_lock:
            self._dirty.update(paths)

    def barrier(self) -> None:
        """Wait until every watch event for a change made before now has reached
        ``_watched``: ZooKeeper sends a watch event before the answer to a later request
        (the sync), and kazoo hands its callbacks to one queue in order (the marker)."""
        self.zk.sync("/")
        done = threading.Event()
        self.zk.handler.dispatch_callback(Callback("watch", done.set, ()))
        done.wait(5.0)

    # -- loading ---------------------------------------------------------------------

    def reload(self) -> None:
        """Everything again, under the current session (its watches are new)."""
        session = self.zk.client_id[0] if self.zk.client_id else None
        with self._dirty_lock:
            self._dirty.clear()
        with self.lock:
            self.session = session
            self.brokers.clear()
            self.topics.clear()
            self.states.clear()
            self.delete_requests.clear()
            self.controller = None
            self._load_cluster_id()
            # Those there now are older than the states read below.
            self._new_states_seen = max(self._new_states_children(), default=-1)
            self._apply({znodes.BROKER_IDS, znodes.CONTROLLER, znodes.TOPICS, znodes.DELETE_TOPICS})
            self.generation += 1
        self.watch_new()

    def refresh(self, defer_new: bool = False) -> bool:
        """Re-read what changed since the last call. True when the cache changed.
        ``defer_new``: the states of partitions new to the cache are left to ``watch_new``."""
        session = self.zk.client_id[0] if self.zk.client_id else None
        if session != self.session:
            self.reload()
            return True
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, set()
        if not dirty:
            return False if defer_new else self.watch_new()
        with self.lock:
            before = self.generation
            try:
                self._apply(dirty)
            except BaseException:
                self.mark(dirty)
                raise
            changed = self.generation != before
        return (self.watch_new() or changed) if not defer_new else changed

    def watch_new(self) -> bool:
        """Read and watch the states of the partitions ``refresh`` left, without holding
        the lock meanwhile (a snapshot of what the controller wrote into the cache can be
        pushed at the same time). True when the cache changed."""
        with self.lock:
            before = self.generation
            keys = {k for k in self._unwatched if k[0] in self.topics}
            self._unwatched.clear()
            # Those this broker's controller wrote exist: a get arms their watches.
            written = {k for k in keys if k in self.states}
        if not keys:
            return False
        try:
            # The others' states are read where their partition's znode is there: the
            # controller creates it together with the state, and one watched list per
            # topic tells (a round trip per topic rather than a watched exists per
            # partition); the list's watch brings the rest.
            unknown = keys - written
            lists = self._get_children_all({znodes.partitions_path(t) for t, _p in unknown})
            there = {
                (t, p) for t, p in unknown if str(p) in (lists.get(znodes.partitions_path(t)) or ())
            }
            paths = {znodes.partition_state_path(t, p): (t, p) for t, p in written | there}
            got = self._get_all(list(paths))
        except BaseException:
            with self.lock:
                self._unwatched |= keys
            raise
        with self.lock:
            # A state missing then and here now was read by a refresh meanwhile: kept.
            self._put_read(paths, got, drop_missing=False)
            return self.generation != before

    def _load_cluster_id(self) -> None:
        try:
            data, _ = self.zk.get(znodes.CLUSTER_ID)
            self.cluster_id = znodes.parse_cluster_id(data)
        except NoNodeError:
            self.cluster_id = ""

    def _apply(self, dirty: set[str]) -> None:
        topics_dirty: set[str] = set()
        configs_dirty: set[str] = set()
        states_dirty: set[PartitionKey] = set()
        lists_dirty: set[str] = set()
        topic_prefix = znodes.TOPICS + "/"
        config_prefix = znodes.CONFIG_TOPICS + "/"
        for path in dirty:
            if path.startswith(topic_prefix):
                rest = path[len(topic_prefix) :]
                if "/" not in rest:
                    topics_dirty.add(rest)
                elif (listed := partitions_topic(path)) is not None:
                    lists_dirty.add(listed)
                else:
                    key = state_key(path)
                    if key is not None:
                        states_dirty.add(key)
            elif path.startswith(config_prefix):
                configs_dirty.add(path[len(config_prefix) :])
        if znodes.CONTROLLER in dirty:
            self._load_controller()
        if znodes.BROKER_IDS in dirty:
            self._load_brokers()
        if znodes.DELETE_TOPICS in dirty:
            children = self.zk.get_children(znodes.DELETE_TOPICS, watch=self._watched)
            if set(children) != self.delete_requests:
                self.delete_requests = set(children)
                self.generation += 1
        if znodes.TOPICS in dirty:
            names = set(self.zk.get_children(znodes.TOPICS, watch=self._watched))
            for gone in set(self.topics) - names:
                self._drop_topic(gone)
            new = names - set(self.topics)
            topics_dirty |= new
            configs_dirty |= new
        topics_dirty = {t for t in topics_dirty if not t.startswith(".")}
        new_partitions = self._load_topics(topics_dirty, configs_dirty)
        self._unwatched |= new_partitions - states_dirty
        if znodes.NEW_STATES in dirty:
            self._load_new_states()
        states_dirty |= self._listed_unknown(lists_dirty - topics_dirty)
        self._load_states({k for k in states_dirty if k[0] in self.topics})

    def _new_states_children(self) -> list[int]:
        """The sequence numbers of ``NEW_STATES``' children, the list watched."""
        try:
            names = self.zk.get_children(znodes.NEW_STATES, watch=self._watched)
        except NoNodeError:
            if self.zk.exists(znodes.NEW_STATES, watch=self._watched) is not None:
                self.mark([znodes.NEW_STATES])
            return []
        return [s for s in map(znodes.new_states_sequence, names) if s is not None]

    def _load_new_states(self) -> None:
        """The states the controller has created since the last read, each taken at
        version 0 when its topic (same id) is known and its state is not; their watches
        are armed by ``watch_new`` (after a snapshot with them can be pushed)."""
        fresh = sorted(s for s in self._new_states_children() if s > self._new_states_seen)
        if not fresh:
            return
        paths = [f"{znodes.NEW_STATES}/{znodes.NEW_STATES_PREFIX}{s:010d}" for s in fresh]
        got = self._get_all(paths, watch=False)
        self._new_states_seen = fresh[-1]
        for path in paths:
            read = got[path]
            if read is None:
                continue  # deleted by the controller meanwhile: the states are read instead
            for t, tid, p, state in znodes.parse_new_states(read[0]):
                entry = self.topics.get(t)
                key = (t, p)
                if (
                    entry is None
                    or entry.znode.topic_id is None
                    or znodes.topic_id_string(entry.znode.topic_id) != tid
                    or p not in entry.znode.assignment
                    or key in self.states
                ):
                    continue
                self.states[key] = PartitionState(state, 0)
                self._unwatched.add(key)
                self.generation += 1

    def _listed_unknown(self, topics: set[str]) -> set[PartitionKey]:
        """The partitions of ``topics`` whose znodes are listed now (the lists read again,
        re-arming their watches) and whose states the cache lacks."""
        topics = {t for t in topics if t in self.topics}
        lists = self._get_children_all({znodes.partitions_path(t) for t in topics})
        found: set[PartitionKey] = set()
        for t in topics:
            assignment = self.topics[t].znode.assignment
            for child in lists.get(znodes.partitions_path(t)) or ():
                key = (t, int(child)) if child.isdigit() else None
                if key is not None and key[1] in assignment and key not in self.states:
                    found.add(key)
        return found

    def _load_controller(self) -> None:
        got = self._get_all([znodes.CONTROLLER])[znodes.CONTROLLER]
        seat = None if got is None else (znodes.parse_controller(got[0]), got[1].ephemeralOwner)
        if seat != self.controller:
            self.controller = seat
            self.generation += 1

    def _load_brokers(self) -> None:
        ids = {int(c) for c in self.zk.get_children(znodes.BROKER_IDS, watch=self._watched)}
        # Registrations are never rewritten, only dropped and made again (a new session):
        # the list's watch sees both, so only new members are read.
        wanted = [b for b in ids if b not in self.brokers]
        gone = set(self.brokers) - ids
        for b in gone:
            del self.brokers[b]
        got = self._get_all([znodes.broker_path(b) for b in wanted], watch=False)
        for b in wanted:
            read = got[znodes.broker_path(b)]
            if read is not None:
                self.brokers[b] = Registration(
                    znodes.parse_broker(b, read[0]), read[1].ephemeralOwner, read[0]
                )
        if wanted or gone:
            self.generation += 1

    def _drop_topic(self, topic: str) -> None:
        self.topics.pop(topic, None)
        for key in [k for k in self.states if k[0] == topic]:
            del self.states[key]
        self.generation += 1

    def _load_topics(self, topics: set[str], configs: set[str]) -> set[PartitionKey]:
        """Read topic and config znodes; the partitions whose state must be read now
        (those new to the cache)."""
        got = self._get_all([znodes.topic_path(t) for t in topics])
        got_configs = self._get_all([znodes.topic_config_path(t) for t in configs])
        new: set[PartitionKey] = set()
        for t in topics:
            read = got[znodes.topic_path(t)]
            if read is None:
                if t in self.topics:
                    self._drop_topic(t)
                continue
            tz = znodes.parse_topic_znode(read[0])
            if tz.topic_id is None:
                continue
            old = self.topics.get(t)
            if old is not None and old.version == read[1].version and old.znode == tz:
                continue
            if old is not None and old.znode.topic_id != tz.topic_id:
                self._drop_topic(t)
                old = None
            known = set() if old is None else set(old.znode.assignment)
            for p in set(tz.assignment) - known:
                new.add((t, p))
            for p in known - set(tz.assignment):
                self.states.pop((t, p), None)
            self.topics[t] = TopicEntry(tz, read[1].version, {} if old is None else old.configs)
            if old is None:
                configs.add(t)
                if t not in got_configs:
                    got_configs.update(self._get_all([znodes.topic_config_path(t)]))
            self.generation += 1
        for t in configs:
            entry = self.topics.get(t)
            read = got_configs.get(znodes.topic_config_path(t))
            if entry is None:
                continue
            values = znodes.parse_config(read[0]) if read is not None else {}
            if values != entry.configs:
                entry.configs = values
                self.generation += 1
        return new

    def _load_states(self, keys: set[PartitionKey]) -> None:
        paths = {znodes.partition_state_path(t, p): (t, p) for t, p in keys}
        self._put_read(paths, self._get_all(list(paths)))

    def _put_read(
        self,
        paths: dict[str, PartitionKey],
        got: dict[str, tuple[bytes, ZnodeStat] | None],
        drop_missing: bool = True,
    ) -> None:
        """Partition states as read (None: the znode is gone)."""
        for path, key in paths.items():
            read = got[path]
            if read is None:
                if drop_missing and self.states.pop(key, None) is not None:
                    self.generation += 1
                continue
            self.put_state(key, znodes.parse_state(read[0]), read[1].version)

    def put_state(self, key: PartitionKey, state: znodes.LeaderAndIsr, version: int) -> bool:
        """Take a partition state read or written at ``version``, unless a newer one is
        here already. True when it changed the cache."""
        with self.lock:
            old = self.states.get(key)
            if old is not None and (old.version > version or old.state == state):
                if old.version < version:
                    self.states[key] = PartitionState(state, version)
                return False
            if key[0] not in self.topics:
                return False
            self.states[key] = PartitionState(state, version)
            self.generation += 1
            return True

    def put_created(self, key: PartitionKey, state: znodes.LeaderAndIsr) -> None:
        """Take a state this broker has just created (version 0); its watch is armed by
        ``watch_new`` like any new partition's (the partition list it may be found in
        next is skipped for states the cache has)."""
        with self.lock:
            self.put_state(key, state, 0)
            self._unwatched.add(key)

    def read_states(self, keys: Iterable[PartitionKey]) -> None:
        """Read these partition states now (after a write whose outcome must be known
        before answering)."""
        with self.lock:
            self._load_states(set(keys))

    def _get_children_all(self, paths: set[str]) -> dict[str, list[str] | None]:
        """Pipelined watched child lists; a missing znode is watched for its creation."""
        pending = [(p, self.zk.get_children_async(p, watch=self._watched)) for p in paths]
        out: dict[str, list[str] | None] = {}
        missing: list[str] = []
        for path, result in pending:
            try:
                out[path] = list(result.get())
            except NoNodeError:
                out[path] = None
                missing.append(path)
        exists = [(p, self.zk.exists_async(p, watch=self._watched)) for p in missing]
        for path, result in exists:
            if result.get() is not None:
                # Created in between: read it on the next pass.
                self.mark([path])
        return out

    def _get_all(
        self, paths: list[str], watch: bool = True
    ) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        """Pipelined gets, each re-arming its watch; a missing znode is watched for its
        creation instead."""
        callback = self._watched if watch else None
        pending = [(p, self.zk.get_async(p, watch=callback)) for p in paths]
        out: dict[str, tuple[bytes, ZnodeStat] | None] = {}
        missing: list[str] = []
        for path, result in pending:
            try:
                data, stat = result.get()
                out[path] = (bytes(data), stat)
            except NoNodeError:
                out[path] = None
                missing.append(path)
        if watch and missing:
            exists = [(p, self.zk.exists_async(p, watch=callback)) for p in missing]
            for path, result in exists:
                if result.get() is not None:
                    # Created in between: read it on the next pass.
                    self.mark([path])
        return out

    # -- views -----------------------------------------------------------------------

    def live_brokers(self) -> set[int]:
        with self.lock:
            return set(self.brokers)

    def controller_id(self) -> int:
        return -1 if self.controller is None else self.controller[0]

    def elected(self, topic: str, partitions: Iterable[int]) -> bool:
        """Whether every one of ``partitions`` of ``topic`` has a leader and ISR here."""
        with self.lock:
            return topic in self.topics and all((topic, p) in self.states for p in partitions)

    def snapshot_arguments(self) -> tuple[str, int, list[Any], list[Any]]:
        """What ``BrokerServer.apply_metadata`` takes: live brokers, and every topic with
        the partitions that have a leader and ISR (a coordinator's topic only whole: its
        partition count places keys, so brokers must not disagree on it meanwhile)."""
        with self.lock:
            brokers = [
                (b.broker_id, b.host, b.port, b.rack, list(b.endpoints))
                for b in (self.brokers[i].info for i in sorted(self.brokers))
            ]
            topics = []
            for name in sorted(self.topics):
                entry = self.topics[name]
                assert entry.znode.topic_id is not None
                parts = []
                for p, replicas in sorted(entry.znode.assignment.items()):
                    ps = self.states.get((name, p))
                    if ps is None:
                        # Kafka's metadata cache only learns partitions with a leader.
                        break
                    s = ps.state
                    parts.append((p, s.leader, s.leader_epoch, replicas, s.isr))
                if not parts or (
                    name.startswith("__") and len(parts) < len(entry.znode.assignment)
                ):
                    continue
                topics.append((name, entry.znode.topic_id.bytes, dict(entry.configs), parts))
            return self.cluster_id, self.controller_id(), brokers, topics
