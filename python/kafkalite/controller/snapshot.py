"""Read the cluster's metadata out of ZooKeeper as one snapshot: live brokers, the
controller, every topic with its id, config overrides and each partition's replicas,
leader, leader epoch and ISR -- what a broker's Rust side serves Metadata from
(``BrokerServer.apply_metadata``). Every read re-arms a watch, so any change to what the
snapshot covers calls ``watch``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalite.controller import znodes

Watch = Callable[[Any], None] | None


@dataclass
class Snapshot:
    cluster_id: str
    controller_id: int
    brokers: list[znodes.BrokerInfo]
    # name -> (topic id bytes, configs, [(partition, leader, epoch, replicas, isr)])
    topics: dict[
        str, tuple[bytes, dict[str, str], list[tuple[int, int, int, list[int], list[int]]]]
    ] = field(default_factory=dict)

    def as_arguments(self) -> tuple[str, int, list[Any], list[Any]]:
        brokers = [(b.broker_id, b.host, b.port, b.rack, list(b.endpoints)) for b in self.brokers]
        topics = [
            (name, tid, configs, parts) for name, (tid, configs, parts) in self.topics.items()
        ]
        return self.cluster_id, self.controller_id, brokers, topics


def _get(zk: KazooClient, path: str, watch: Watch) -> bytes | None:
    try:
        data, _stat = zk.get(path, watch=watch)
        return bytes(data)
    except NoNodeError:
        # Watch for its creation instead.
        zk.exists(path, watch=watch)
        return None


def read(zk: KazooClient, watch: Watch = None) -> Snapshot:
    cluster = _get(zk, znodes.CLUSTER_ID, None)
    controller = _get(zk, znodes.CONTROLLER, watch)
    snap = Snapshot(
        cluster_id=znodes.parse_cluster_id(cluster) if cluster else "",
        controller_id=znodes.parse_controller(controller) if controller else -1,
        brokers=[],
    )
    for child in sorted(zk.get_children(znodes.BROKER_IDS, watch=watch), key=int):
        data = _get(zk, znodes.broker_path(int(child)), None)
        if data is not None:
            snap.brokers.append(znodes.parse_broker(int(child), data))
    for topic in sorted(zk.get_children(znodes.TOPICS, watch=watch)):
        data = _get(zk, znodes.topic_path(topic), watch)
        if data is None:
            continue
        assignment, topic_id = znodes.parse_topic(data)
        if topic_id is None:
            continue
        config = _get(zk, znodes.topic_config_path(topic), watch)
        parts = []
        for p, replicas in sorted(assignment.items()):
            state = _get(zk, znodes.partition_state_path(topic, p), watch)
            if state is None:
                # New partitions the controller has not started yet are left out, as
                # Kafka's metadata cache only learns partitions with a leader and ISR.
                break
            s = znodes.parse_state(state)
            parts.append((p, s.leader, s.leader_epoch, replicas, s.isr))
        # A coordinator's topic places keys by its partition count (abs(hash) % count):
        # it shows only whole, or brokers would disagree about placement meanwhile.
        if not parts or (topic.startswith("__") and len(parts) < len(assignment)):
            continue
        snap.topics[topic] = (
            topic_id.bytes,
            znodes.parse_config(config) if config else {},
            parts,
        )
    return snap
