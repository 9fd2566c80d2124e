"""Group-level configs (KIP-848's GROUP config resources) in cluster mode:
``/config/groups/<group>`` holding ``{"version":1,"config":{...}}`` beside the other entity
configs, each change announced with a ``/config/changes/config_change_`` notification.
Kafka 4.1 keeps them in its KRaft metadata; ZooKeeper is kafkalite's metadata store, so
they live there and every broker, whichever coordinates the group, reads the same set
(``entity_configs.read_all``, pushed with ``BrokerServer.apply_group_configs``). A group
whose last key is deleted loses its znode. The broker's Rust side checked each change
before it came here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from kafkalite.controller import entity_configs

ENTITY_TYPE = "groups"


class GroupConfigOps:
    """AlterConfigs and IncrementalAlterConfigs of a GROUP resource in cluster mode:
    written to ZooKeeper and this broker refreshed before the client is answered (the
    others follow on their next pass)."""

    zk: KazooClient
    sync_now: Callable[[], None]

    def alter_group_configs(self, op: dict[str, Any]) -> None:
        entity_configs.replace_whole(self.zk, ENTITY_TYPE, *entity_configs.whole_set_args(op))
        self.sync_now()


__all__ = ["ENTITY_TYPE", "GroupConfigOps"]
