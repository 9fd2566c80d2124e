"""The znode layout and JSON of Kafka's ZooKeeper mode (``kafka.zk.ZkData``), so an
operator's ``zkCli.sh`` shows what it would show for Kafka."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_ELECTION = "/admin/preferred_replica_election"
# kafkalite's own: Kafka's ZooKeeper mode took unclean ElectLeaders straight to the
# controller's event queue; here every request reaches the controller through ZooKeeper.
UNCLEAN_ELECTION = "/admin/unclean_leader_election"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
# kafkalite's own, as Kafka's /isr_change_notification: the states the controller has just
# created for new partitions, a sequential child per transaction, so every broker learns a
# large topic's leaders with one read rather than one per partition (Kafka's ZooKeeper-mode
# controller sent them to the brokers in one UpdateMetadata request).
NEW_STATES = "/admin/new_partition_states"
NEW_STATES_PREFIX = "batch_"
# How many of those the controller keeps; a broker further behind reads the states
# themselves.
NEW_STATES_KEPT = 64
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"

# Kafka creates these at startup (ZkData.PersistentZkPaths).
PERSISTENT_PATHS = (
    "/consumers",
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    CONFIG_TOPICS,
    "/config/clients",
    "/config/users",
    "/config/brokers",
)


def _dump(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partitions_path(topic)}/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None
    # Every registered endpoint, (listener name, host, port), the client listener first.
    endpoints: tuple[tuple[str, str, int], ...] = ()


def broker_json(
    broker: BrokerInfo,
    listener: str = "PLAINTEXT",
    others: Sequence[tuple[str, str, int]] = (),
    protocols: Mapping[str, str] | None = None,
) -> bytes:
    """BrokerIdZNode version 5 (Kafka 2.7+ ZK mode): the client listener first (what
    Metadata serves), then the broker's other advertised listeners (``others``: name,
    host, port), e.g. the one ``inter.broker.listener.name`` names. ``protocols``: each
    listener's security protocol (``listener.security.protocol.map``); a listener missing
    from it is named after its protocol, as Kafka's default map has it."""
    endpoints = [(listener, broker.host, broker.port), *others]
    protocols = protocols or {}
    data: dict[str, object] = {
        "features": {},
        "listener_security_protocol_map": {
            name: protocols.get(name, name) for name, _h, _p in endpoints
        },
        "endpoints": [f"{name}://{host}:{port}" for name, host, port in endpoints],
        "jmx_port": -1,
        "port": broker.port,
        "host": broker.host,
        "version": 5,
        "timestamp": _now_ms(),
    }
    if broker.rack is not None:
        data["rack"] = broker.rack
    return _dump(data)


def _split_endpoint(e: str) -> tuple[str, str, int]:
    name, _, host_port = e.partition("://")
    host, _, port = host_port.rpartition(":")
    return name, host.strip("[]"), int(port)


def parse_broker(broker_id: int, data: bytes) -> BrokerInfo:
    d = json.loads(data)
    endpoints = tuple(_split_endpoint(e) for e in d["endpoints"])
    _name, host, port = endpoints[0]
    return BrokerInfo(broker_id, host, port, d.get("rack"), endpoints)


def security_protocols(data: bytes) -> dict[str, str]:
    """A broker znode's ``listener_security_protocol_map``."""
    return dict(json.loads(data).get("listener_security_protocol_map", {}))


def endpoint(data: bytes, listener: str) -> tuple[str, int] | None:
    """(host, port) a broker's znode advertises for ``listener``, None if it has none: how
    brokers reach each other on ``inter.broker.listener.name``."""
    for name, host, port in parse_broker(-1, data).endpoints:
        if name == listener:
            return host, port
    return None


def controller_json(broker_id: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": _now_ms()})


def parse_controller(data: bytes) -> int:
    return int(json.loads(data)["brokerid"])


def topic_id_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def parse_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def topic_json(
    assignment: dict[int, list[int]],
    topic_id: uuid.UUID,
    adding: dict[int, list[int]] | None = None,
    removing: dict[int, list[int]] | None = None,
) -> bytes:
    """TopicZNode version 3: the replica assignment, the topic id and the replicas an
    ongoing reassignment adds and removes (partitions without one are left out)."""

    def by_partition(m: dict[int, list[int]] | None) -> dict[str, list[int]]:
        return {str(p): r for p, r in sorted((m or {}).items()) if r}

    return _dump(
        {
            "version": 3,
            "topic_id": topic_id_string(topic_id),
            "partitions": {str(p): replicas for p, replicas in sorted(assignment.items())},
            "adding_replicas": by_partition(adding),
            "removing_replicas": by_partition(removing),
        }
    )


@dataclass
class TopicZNode:
    assignment: dict[int, list[int]]
    topic_id: uuid.UUID | None
    adding: dict[int, list[int]]
    removing: dict[int, list[int]]

    def to_json(self) -> bytes:
        assert self.topic_id is not None
        return topic_json(self.assignment, self.topic_id, self.adding, self.removing)


def parse_topic_znode(data: bytes) -> TopicZNode:
    d = json.loads(data)
    assignment, topic_id = parse_topic(data)

    def by_partition(key: str) -> dict[int, list[int]]:
        return {int(p): list(r) for p, r in (d.get(key) or {}).items() if r}

    return TopicZNode(
        assignment, topic_id, by_partition("adding_replicas"), by_partition("removing_replicas")
    )


def partitions_json(partitions: list[tuple[str, int]]) -> bytes:
    """``/admin/preferred_replica_election``'s JSON: the partitions to elect for."""
    return _dump(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def parse_partitions(data: bytes) -> list[tuple[str, int]]:
    return [(e["topic"], int(e["partition"])) for e in json.loads(data).get("partitions", [])]


def reassignment_json(moves: list[tuple[str, int, list[int] | None]]) -> bytes:
    """``/admin/reassign_partitions``: target replicas per partition; kafkalite writes
    null replicas for a cancellation (Kafka's API path cancelled through the controller's
    event queue, which here is ZooKeeper)."""
    return _dump(
        {
            "version": 1,
            "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in moves],
        }
    )


def parse_reassignment(data: bytes) -> list[tuple[str, int, list[int] | None]]:
    return [
        (e["topic"], int(e["partition"]), None if e.get("replicas") is None else e["replicas"])
        for e in json.loads(data).get("partitions", [])
    ]


def producer_id_block_json(broker: int, first: int, last: int) -> bytes:
    """ProducerIdBlockZNode version 1 (ids as strings, as Kafka wrote them)."""
    return _dump(
        {"version": 1, "broker": broker, "block_start": str(first), "block_end": str(last)}
    )


def parse_producer_id_block(data: bytes) -> tuple[int, int]:
    d = json.loads(data)
    return int(d["block_start"]), int(d["block_end"])


def parse_topic(data: bytes) -> tuple[dict[int, list[int]], uuid.UUID | None]:
    d = json.loads(data)
    assignment = {int(p): list(r) for p, r in d["partitions"].items()}
    text = d.get("topic_id")
    return assignment, parse_topic_id(text) if text else None


@dataclass(frozen=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int


def state_json(s: LeaderAndIsr) -> bytes:
    return _dump(
        {
            "controller_epoch": s.controller_epoch,
            "leader": s.leader,
            "version": 1,
            "leader_epoch": s.leader_epoch,
            "isr": s.isr,
        }
    )


def parse_state(data: bytes) -> LeaderAndIsr:
    d = json.loads(data)
    return LeaderAndIsr(d["leader"], d["leader_epoch"], list(d["isr"]), d["controller_epoch"])


def new_states_json(entries: Sequence[tuple[str, uuid.UUID | None, int, LeaderAndIsr]]) -> bytes:
    """A ``NEW_STATES`` child: (topic, topic id, partition, state) for each new partition,
    every state at znode version 0 (created in the same transaction)."""
    return _dump(
        {
            "version": 1,
            "partitions": [
                [t, None if tid is None else topic_id_string(tid), p, json.loads(state_json(s))]
                for t, tid, p, s in entries
            ],
        }
    )


def parse_new_states(data: bytes) -> list[tuple[str, str | None, int, LeaderAndIsr]]:
    return [
        (t, tid, int(p), parse_state(json.dumps(s).encode()))
        for t, tid, p, s in json.loads(data)["partitions"]
    ]


def new_states_sequence(name: str) -> int | None:
    """``batch_0000000042`` -> 42."""
    if not name.startswith(NEW_STATES_PREFIX):
        return None
    digits = name[len(NEW_STATES_PREFIX) :]
    return int(digits) if digits.isdigit() else None


def config_json(configs: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": configs})


def parse_config(data: bytes) -> dict[str, str]:
    return {k: str(v) for k, v in json.loads(data).get("config", {}).items()}


def config_change_json(topic: str) -> bytes:
    return _dump({"version": 2, "entity_path": f"topics/{topic}"})


def cluster_id_json(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def parse_cluster_id(data: bytes) -> str:
    return str(json.loads(data)["id"])
