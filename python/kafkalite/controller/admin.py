"""Metadata-changing admin requests in cluster mode, as Kafka's ``AdminZkClient`` wrote
them: a client's CreateTopics, DeleteTopics, CreatePartitions or AlterConfigs (and the security
changes of ``shared_security``) reaches any
broker, whose Rust side queues it (``BrokerServer.next_admin_request``); here it is
checked against ZooKeeper and the live brokers, written there, and answered once the
controller has acted on it (``complete_admin_request``)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkalite import _core
from kafkalite.controller import znodes
from kafkalite.controller.admin_moves import CONTROLLER_WAIT_S, AdminError, LeaderAndReplicaOps
from kafkalite.controller.assignment import AssignmentError, assign, check_manual
from kafkalite.controller.client_metrics import ClientMetricsOps
from kafkalite.controller.client_quotas import ClientQuotaOps
from kafkalite.controller.group_configs import GroupConfigOps
from kafkalite.controller.shared_security import SecretError, SecurityOps

_log = logging.getLogger("kafkalite.controller")

# Topics the brokers create for their coordinators (on the first FindCoordinator), with
# the replication factor of a broker key.
INTERNAL_TOPICS = {
    "__consumer_offsets": "offsets.topic.replication.factor",
    "__transaction_state": "transaction.state.log.replication.factor",
}


class Waiting(Protocol):
    """What answers a request later (``ClusterNode.wait_for``): once ``done`` shows in a
    snapshot the broker has, or with REQUEST_TIMED_OUT."""

    def wait_for(
        self,
        request_id: int,
        done: Callable[[], bool],
        timeout_s: float,
        what: str,
        at_commit: bool = False,
    ) -> None: ...

    @property
    def cache(self) -> Any: ...


# Returned by an operation whose answer a waiter gives.
WAITING = object()

# Topics created together go into transactions of at most this many topics and bytes
# (ZooKeeper refuses a request over jute.maxbuffer, 1 MiB by default).
TRANSACTION_TOPICS = 200
TRANSACTION_BYTES = 512 * 1024


def _failure(e: AdminError | AssignmentError | SecretError) -> tuple[int, str]:
    """The error code and message a refused operation is answered with."""
    if isinstance(e, AdminError):
        return e.code, str(e)
    if isinstance(e, AssignmentError):
        return _core.error_code(e.code_name), str(e)
    return _core.error_code("INVALID_CONFIG"), str(e)


class AdminHandler(
    LeaderAndReplicaOps, SecurityOps, ClientQuotaOps, ClientMetricsOps, GroupConfigOps
):
    """``sync_now`` pushes a fresh snapshot into this broker before the client is answered,
    so its next Metadata request sees what was just done. Operations that answer with
    data (``admin_moves``) have it sent back as JSON. Topic creation, deletion and growth
    are answered by a waiter of ``node`` (when given) once the controller has acted, so
    the next request is taken meanwhile: the topics of one CreateTopics are written one
    after another and elected together."""

    def __init__(
        self,
        zk: KazooClient,
        sync_now: Callable[[], None],
        broker_id: int = -1,
        node: Waiting | None = None,
    ) -> None:
        self.zk = zk
        self.sync_now = sync_now
        self.broker_id = broker_id
        self.node = node
        # The id of the request being handled (what a waiter answers).
        self.request_id = -1

    def handle(self, op: dict[str, Any]) -> tuple[int, str] | None:
        """(error code, message or JSON answer); None when a waiter answers later."""
        try:
            answer = getattr(self, op["op"])(op)
        except (AdminError, AssignmentError, SecretError) as e:
            return _failure(e)
        if answer is WAITING:
            return None
        return 0, "" if answer is None else json.dumps(answer)

    def _answer_when(self, done: Callable[[], bool], what: str, at_commit: bool = False) -> object:
        """Answer once ``done`` holds: by a waiter when there is a node, else here."""
        if self.node is None:
            self._wait(done, what)
            return None
        self.node.wait_for(self.request_id, done, CONTROLLER_WAIT_S, what, at_commit)
        return WAITING

    def _live(self) -> dict[int, str | None]:
        """Registered brokers and their racks (from the cache, when there is one)."""
        if self.node is not None:
            cache = self.node.cache
            with cache.lock:
                return {b: reg.info.rack for b, reg in cache.brokers.items()}
        out: dict[int, str | None] = {}
        for child in self.zk.get_children(znodes.BROKER_IDS):
            try:
                data, _ = self.zk.get(znodes.broker_path(int(child)))
            except NoNodeError:
                continue
            out[int(child)] = znodes.parse_broker(int(child), data).rack
        return out

    def _assignment(self, topic: str) -> tuple[dict[int, list[int]], uuid.UUID | None, int]:
        try:
            data, stat = self.zk.get(znodes.topic_path(topic))
        except NoNodeError:
            raise AdminError(
                "UNKNOWN_TOPIC_OR_PARTITION", f"topic '{topic}' does not exist"
            ) from None
        assignment, topic_id = znodes.parse_topic(data)
        return assignment, topic_id, stat.version

    def _wait(self, done: Callable[[], bool], what: str, deadline: float | None = None) -> None:
        if deadline is None:
            deadline = time.monotonic() + CONTROLLER_WAIT_S
        waited_s = max(0.0, deadline - time.monotonic())
        while not done():
            if time.monotonic() > deadline:
                raise AdminError(
                    "REQUEST_TIMED_OUT",
                    f"the controller did not {what} within {waited_s:.1f} s",
                )
            time.sleep(0.05)
        self.sync_now()

    def _elected(self, topic: str, partitions: range) -> bool:
        return all(
            self.zk.exists(znodes.partition_state_path(topic, p)) is not None for p in partitions
        )

    def create_topic(self, op: dict[str, Any]) -> object:
        name = op["name"]
        if self.zk.exists(znodes.topic_path(name)) is not None:
            raise AdminError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
        assignment = self._plan(op, self._live())
        if op["validate_only"]:
            return
        # Configs first, then the topic, as AdminZkClient does: the controller and the
        # brokers see the topic only once its configs are in place.
        configs = znodes.config_json(dict(op["configs"]))
        if self.zk.exists(znodes.topic_config_path(name)):
            self.zk.set(znodes.topic_config_path(name), configs)
        else:
            self.zk.create(znodes.topic_config_path(name), configs, makepath=True)
        try:
            self.zk.create(znodes.topic_path(name), znodes.topic_json(assignment, uuid.uuid4()))
        except NodeExistsError:
            raise AdminError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.") from None
        return self._answer_when(
            self._elected_check(name, len(assignment)), "elect leaders", at_commit=True
        )

    def create_topics(
        self, batch: list[tuple[int, dict[str, Any]]]
    ) -> list[tuple[int, tuple[int, str] | None]]:
        """Several topics to create (one CreateTopics request's, or several requests'
        queued together): each checked and assigned, then the config and topic znodes of
        all written in a few pipelined transactions, so the controller elects for all of
        them in one pass and the brokers apply one snapshot for the lot. Each topic is
        answered on its own: an error at once, a success by a waiter once elected
        (``None`` here)."""
        if self.node is None:
            out = []
            for request_id, op in batch:
                self.request_id = request_id
                out.append((request_id, self.handle(op)))
            return out
        answers: list[tuple[int, tuple[int, str] | None]] = []
        live = self._live()
        existing = [
            (request_id, op, self.zk.exists_async(znodes.topic_path(op["name"])))
            for request_id, op in batch
        ]
        planned: list[tuple[int, dict[str, Any], dict[int, list[int]]]] = []
        taken: set[str] = set()
        for request_id, op, exists in existing:
            name = op["name"]
            try:
                if exists.get() is not None or name in taken:
                    raise AdminError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
                assignment = self._plan(op, live)
            except (AdminError, AssignmentError) as e:
                answers.append((request_id, _failure(e)))
                continue
            if op["validate_only"]:
                answers.append((request_id, (0, "")))
                continue
            taken.add(name)
            planned.append((request_id, op, assignment))
        config_there = [
            self.zk.exists_async(znodes.topic_config_path(op["name"])) for _r, op, _a in planned
        ]
        chunks: list[list[tuple[int, dict[str, Any], dict[int, list[int]]]]] = [[]]
        pending = []
        tx = self.zk.transaction()
        size = 0
        for (request_id, op, assignment), there in zip(planned, config_there, strict=True):
            name = op["name"]
            # Configs with the topic, in one transaction: the controller and the brokers
            # see the topic only with its configs in place, as AdminZkClient orders them.
            configs = znodes.config_json(dict(op["configs"]))
            topic = znodes.topic_json(assignment, uuid.uuid4())
            if there.get() is not None:
                tx.set_data(znodes.topic_config_path(name), configs)
            else:
                tx.create(znodes.topic_config_path(name), configs)
            tx.create(znodes.topic_path(name), topic)
            chunks[-1].append((request_id, op, assignment))
            size += len(configs) + len(topic) + 2 * len(name) + 64
            if size >= TRANSACTION_BYTES or len(chunks[-1]) >= TRANSACTION_TOPICS:
                pending.append(tx.commit_async())
                tx, size = self.zk.transaction(), 0
                chunks.append([])
        if chunks[-1]:
            pending.append(tx.commit_async())
        else:
            chunks.pop()
        for chunk, result in zip(chunks, pending, strict=True):
            try:
                results = result.get()
                failed = any(isinstance(r, Exception) for r in results)
            except Exception as e:  # a lost connection: the chunk's outcome is unknown
                _log.warning("creating %d topic(s) together failed: %s", len(chunk), e)
                failed = True
            for request_id, op, assignment in chunk:
                if failed:
                    # One topic of the chunk was created meanwhile (or the write was
                    # refused): the chunk wrote nothing, so each goes its own way.
                    self.request_id = request_id
                    answers.append((request_id, self.handle(op)))
                    continue
                # Answered once the controller has written every partition's leader and
                # ISR (Kafka's controller answers at commit; the brokers then create the
                # logs and show the topic, as Kafka's do).
                self.node.wait_for(
                    request_id,
                    self._elected_check(op["name"], len(assignment)),
                    CONTROLLER_WAIT_S,
                    "elect leaders",
                    at_commit=True,
                )
                answers.append((request_id, None))
        return answers

    def _plan(self, op: dict[str, Any], live: dict[int, str | None]) -> dict[int, list[int]]:
        """The replica assignment of a topic to create: the request's own, checked, or
        Kafka's rack-aware one over the live brokers."""
        name = op["name"]
        if op["assignments"]:
            assignment = {p: list(r) for p, r in op["assignments"]}
            check_manual(assignment, set(live))
            return assignment
        factor = op["replication_factor"]
        if name in INTERNAL_TOPICS and factor > len(live):
            # Kafka's early behaviour: the coordinator's topic must exist for groups to
            # work at all, so take the brokers there are (it stays at that factor).
            _log.warning(
                "creating %s with replication factor %d: only %d broker(s) are alive, "
                "fewer than %s=%d",
                name,
                len(live),
                len(live),
                INTERNAL_TOPICS[name],
                factor,
            )
            factor = len(live)
        return assign(op["partitions"], factor, live)

    def _elected_check(self, name: str, count: int) -> Callable[[], bool]:
        if self.node is None:
            return lambda: self._elected(name, range(count))
        cache = self.node.cache
        return lambda: cache.elected(name, range(count))

    def delete_topic(self, op: dict[str, Any]) -> object:
        name = op["name"]
        self._assignment(name)
        try:
            self.zk.create(f"{znodes.DELETE_TOPICS}/{name}", b"", makepath=True)
        except NodeExistsError:
            pass
        if self.node is None:
            self._wait(lambda: self.zk.exists(znodes.topic_path(name)) is None, "delete the topic")
            return None
        cache = self.node.cache
        return self._answer_when(lambda: name not in cache.topics, "delete the topic")

    def create_partitions(self, op: dict[str, Any]) -> object:
        name, total = op["name"], op["total"]
        assignment, topic_id, version = self._assignment(name)
        current = len(assignment)
        if total < current:
            raise AdminError(
                "INVALID_PARTITIONS",
                f"The topic {name} currently has {current} partition(s); {total} would not be "
                "an increase.",
            )
        if total == current:
            raise AdminError("INVALID_PARTITIONS", f"Topic already has {current} partition(s).")
        live = self._live()
        if op.get("assignments"):
            if len(op["assignments"]) != total - current:
                raise AdminError(
                    "INVALID_REPLICA_ASSIGNMENT",
                    f"Attempted to add {total - current} additional partition(s), but only "
                    f"{len(op['assignments'])} assignment(s) were specified.",
                )
            # The client's own placement of the added partitions: known brokers, and
            # the topic's replication factor (AdminZkClient.addPartitions checks both).
            added = {current + i: list(r) for i, r in enumerate(op["assignments"])}
            check_manual({**assignment, **added}, set(live))
        else:
            # As AdminZkClient.addPartitions: same replication factor, starting where
            # partition 0's first replica sits in the broker list.
            first = assignment[0][0]
            ordered = sorted(live)
            start = ordered.index(first) if first in ordered else -1
            added = assign(
                total - current,
                len(assignment[0]),
                live,
                start_index=start,
                start_partition=current,
            )
        if op["validate_only"]:
            return
        assert topic_id is not None
        try:
            self.zk.set(
                znodes.topic_path(name),
                znodes.topic_json({**assignment, **added}, topic_id),
                version=version,
            )
        except Exception as e:
            raise AdminError("INVALID_REQUEST", f"topic '{name}' changed: {e}") from e
        return self._answer_when(self._elected_check(name, total), "elect leaders")

    def alter_configs(self, op: dict[str, Any]) -> None:
        name = op["name"]
        self._assignment(name)
        if op["validate_only"]:
            return
        self.zk.set(znodes.topic_config_path(name), znodes.config_json(dict(op["configs"])))
        # Kafka's change notification, for tools that watch it.
        self.zk.create(
            f"{znodes.CONFIG_CHANGES}/config_change_",
            znodes.config_change_json(name),
            sequence=True,
        )
        self.sync_now()
