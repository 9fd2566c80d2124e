"""The admin requests that move leaders and replicas, and producer-id blocks: ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments and InitProducerId's id blocks.
Each arrives as ``{"op": ..., "args": <JSON>}`` from the broker's Rust side and is
answered with JSON. Elections and reassignments are checked here against ZooKeeper,
queued for the controller in Kafka's ``/admin`` znodes, and answered once the controller
has taken them (it deletes the znode)."""

from __future__ import annotations

import json
import time
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkalite.controller import leadership, znodes
from kafkalite.controller.reassignment import origin_replicas

# Kafka's ProducerIdManager.PidBlockSize.
PRODUCER_ID_BLOCK_SIZE = 1000

# How long to wait for the controller: under the broker's own ADMIN_WAIT_MS (25 s), so
# the client gets this side's answer rather than the broker's REQUEST_TIMED_OUT.
CONTROLLER_WAIT_S = 20.0

# How long before a request's timeout_ms this side answers, so its answer (with
# REQUEST_TIMED_OUT for what did not finish) reaches the client before the broker's own.
ANSWER_MARGIN_S = 0.3

Outcome = dict[str, Any]


class AdminError(Exception):
    def __init__(self, code_name: str, message: str) -> None:
        super().__init__(message)
        self.code = _core_code(code_name)


def _outcome(topic: str, partition: int, error: str | None, message: str | None = None) -> Outcome:
    from kafkalite import _core

    return {
        "topic": topic,
        "partition": partition,
        "error_code": 0 if error is None else _core.error_code(error),
        "message": message,
    }


class LeaderAndReplicaOps:
    zk: KazooClient
    broker_id: int

    def _live(self) -> dict[int, str | None]:
        raise NotImplementedError

    def _wait(self, done: Any, what: str, deadline: float | None = None) -> None:
        raise NotImplementedError

    def _partition_view(
        self, topic: str, partition: int
    ) -> tuple[znodes.TopicZNode, znodes.LeaderAndIsr] | None:
        try:
            tdata, _ = self.zk.get(znodes.topic_path(topic))
            sdata, _ = self.zk.get(znodes.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        tz = znodes.parse_topic_znode(tdata)
        if partition not in tz.assignment:
            return None
        return tz, znodes.parse_state(sdata)

    def _all_partitions(self) -> list[tuple[str, int]]:
        out = []
        for topic in sorted(self.zk.get_children(znodes.TOPICS)):
            try:
                data, _ = self.zk.get(znodes.topic_path(topic))
            except NoNodeError:
                continue
            out.extend((topic, p) for p in sorted(znodes.parse_topic(data)[0]))
        return out

    def _queue(self, path: str, data: bytes, deadline: float) -> None:
        """Create the request znode once the controller has taken the previous one, and
        wait until it takes this one; AdminError(REQUEST_TIMED_OUT) past ``deadline``
        (a znode created by then is still taken later, as Kafka carries on with a
        request whose client stopped waiting)."""
        while True:
            try:
                self.zk.create(path, data, makepath=True)
                break
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise AdminError(
                        "REQUEST_TIMED_OUT", f"an earlier request still holds {path}"
                    ) from None
                time.sleep(0.05)
        self._wait(lambda: self.zk.exists(path) is None, f"take {path}", deadline)

    def elect_leaders(self, op: dict[str, Any]) -> list[Outcome]:
        args = json.loads(op["args"])
        kind = int(args["election_type"])
        named = args["partitions"]
        every = named is None
        wanted = (
            self._all_partitions() if every else [(t, int(p)) for t, parts in named for p in parts]
        )
        live = set(self._live())
        results: dict[tuple[str, int], Outcome] = {}
        queued: list[tuple[str, int]] = []
        for topic, p in wanted:
            view = self._partition_view(topic, p)
            if view is None:
                results[(topic, p)] = _outcome(topic, p, "UNKNOWN_TOPIC_OR_PARTITION")
                continue
            tz, state = view
            replicas = tz.assignment[p]
            if kind == leadership.PREFERRED:
                _leader, error = leadership.preferred_choice(replicas, state, live)
            else:
                _leader, _isr, error = leadership.unclean_choice(replicas, state, live)
            if error is None:
                queued.append((topic, p))
            else:
                results[(topic, p)] = _outcome(topic, p, error, _message(error, topic, p))
        if queued:
            path = znodes.PREFERRED_ELECTION if kind == 0 else znodes.UNCLEAN_ELECTION
            timed_out = False
            try:
                self._queue(path, znodes.partitions_json(queued), _deadline(args))
            except AdminError as e:
                if e.code != _core_code("REQUEST_TIMED_OUT"):
                    raise
                timed_out = True
            # What the controller did, read back: it elects only what it still can.
            live = set(self._live())
            for topic, p in queued:
                view = self._partition_view(topic, p)
                done = view is not None and (
                    view[1].leader == view[0].assignment[p][0]
                    if kind == leadership.PREFERRED
                    else view[1].leader in live
                )
                error = None
                if not done and timed_out:
                    # Kafka's DelayedElectLeader: what is not elected by the request's
                    # timeout is answered REQUEST_TIMED_OUT.
                    error = "REQUEST_TIMED_OUT"
                elif not done:
                    error = (
                        "PREFERRED_LEADER_NOT_AVAILABLE"
                        if kind == leadership.PREFERRED
                        else "ELIGIBLE_LEADERS_NOT_AVAILABLE"
                    )
                results[(topic, p)] = _outcome(topic, p, error, _message(error, topic, p))
        out = [results[k] for k in dict.fromkeys(wanted)]
        if every:
            # As Kafka: an election over all partitions lists only those it acted on.
            from kafkalite import _core

            skip = _core.error_code("ELECTION_NOT_NEEDED")
            out = [o for o in out if o["error_code"] != skip]
        return out

    def alter_reassignments(self, op: dict[str, Any]) -> list[Outcome]:
        args = json.loads(op["args"])
        allow_rf_change = bool(args.get("allow_replication_factor_change", True))
        live = set(self._live())
        results: list[Outcome] = []
        moves: list[tuple[str, int, list[int] | None]] = []
        for entry in args["partitions"]:
            topic, p, target = entry["topic"], int(entry["partition"]), entry["replicas"]
            view = self._partition_view(topic, p)
            if view is None:
                results.append(_outcome(topic, p, "UNKNOWN_TOPIC_OR_PARTITION"))
                continue
            tz, _state = view
            ongoing = p in tz.adding or p in tz.removing
            error, message = None, None
            if target is None:
                if not ongoing:
                    error = "NO_REASSIGNMENT_IN_PROGRESS"
                    message = f"No ongoing reassignment for {topic}-{p}."
            elif not target:
                error, message = "INVALID_REPLICA_ASSIGNMENT", "The replica set is empty."
            elif len(set(target)) != len(target):
                error = "INVALID_REPLICA_ASSIGNMENT"
                message = f"Duplicate replica ids in the target {target}."
            elif any(b not in live for b in target):
                unknown = sorted(b for b in target if b not in live)
                error = "INVALID_REPLICA_ASSIGNMENT"
                message = f"The target replicas {target} name brokers {unknown} that are not alive."
            elif not allow_rf_change and len(target) != len(
                origin_replicas(tz.assignment[p], tz.adding.get(p, []))
            ):
                error = "INVALID_REPLICATION_FACTOR"
                message = f"The replication factor of {topic}-{p} may not change."
            results.append(_outcome(topic, p, error, message))
            if error is None:
                moves.append((topic, p, target))
        if moves:
            try:
                self._queue(
                    znodes.REASSIGN_PARTITIONS, znodes.reassignment_json(moves), _deadline(args)
                )
            except AdminError as e:
                if e.code != _core_code("REQUEST_TIMED_OUT"):
                    raise
                # The controller did not take the moves within the request's timeout.
                moved = {(t, p) for t, p, _ in moves}
                results = [
                    _outcome(o["topic"], o["partition"], "REQUEST_TIMED_OUT", str(e))
                    if (o["topic"], o["partition"]) in moved
                    else o
                    for o in results
                ]
        return results

    def list_reassignments(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        args = json.loads(op["args"])
        named = args["partitions"]
        wanted = None if named is None else {(t, int(p)) for t, parts in named for p in parts}
        topics = sorted({t for t, _ in wanted}) if wanted is not None else None
        out = []
        for topic in topics if topics is not None else sorted(self.zk.get_children(znodes.TOPICS)):
            try:
                data, _ = self.zk.get(znodes.topic_path(topic))
            except NoNodeError:
                continue
            tz = znodes.parse_topic_znode(data)
            for p in sorted(set(tz.adding) | set(tz.removing)):
                if wanted is not None and (topic, p) not in wanted:
                    continue
                out.append(
                    {
                        "topic": topic,
                        "partition": p,
                        "replicas": tz.assignment[p],
                        "adding": tz.adding.get(p, []),
                        "removing": tz.removing.get(p, []),
                    }
                )
        return out

    def producer_id_block(self, _op: dict[str, Any]) -> tuple[int, int]:
        """Claim the next block of producer ids (Kafka's ZkProducerIdManager): read
        ``/latest_producer_id_block``, write the block after it, compare-and-set on the
        znode version so two brokers never get the same block."""
        while True:
            try:
                data, stat = self.zk.get(znodes.PRODUCER_ID_BLOCK)
            except NoNodeError:
                try:
                    self.zk.create(znodes.PRODUCER_ID_BLOCK, b"", makepath=True)
                except NodeExistsError:
                    pass
                continue
            first = znodes.parse_producer_id_block(data)[1] + 1 if data else 0
            last = first + PRODUCER_ID_BLOCK_SIZE - 1
            try:
                self.zk.set(
                    znodes.PRODUCER_ID_BLOCK,
                    znodes.producer_id_block_json(self.broker_id, first, last),
                    version=stat.version,
                )
            except BadVersionError:
                continue
            return first, last


def _core_code(name: str) -> int:
    from kafkalite import _core

    return _core.error_code(name)


def _deadline(args: dict[str, Any]) -> float:
    """When to stop waiting for the controller: a little before the request's
    ``timeout_ms`` (the broker answers REQUEST_TIMED_OUT itself at it), at most
    CONTROLLER_WAIT_S; no ``timeout_ms`` (an older broker side): CONTROLLER_WAIT_S."""
    wait_s = CONTROLLER_WAIT_S
    if args.get("timeout_ms") is not None:
        wait_s = min(wait_s, max(0.0, int(args["timeout_ms"]) / 1000 - ANSWER_MARGIN_S))
    return time.monotonic() + wait_s


def _message(error: str | None, topic: str, p: int) -> str | None:
    if error == "PREFERRED_LEADER_NOT_AVAILABLE":
        return (
            f"Failed to elect leader for partition {topic}-{p} under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy"
        )
    if error == "ELIGIBLE_LEADERS_NOT_AVAILABLE":
        return f"No live replica of {topic}-{p} can lead it."
    return None
