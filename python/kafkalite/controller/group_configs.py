"""Group-level configs (KIP-848's GROUP config resources) in cluster mode:
``/config/groups/<group>`` holding ``{"version":1,"config":{...}}`` beside the other entity
configs, each change announced with a ``/config/changes/config_change_`` notification.
Kafka 4.1 keeps them in its KRaft metadata; ZooKeeper is kafkalite's metadata store, so
they live there and every broker, whichever coordinates the group, reads the same set. A
group whose last key is deleted loses its znode. The broker's Rust side checked each
change before it came here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalite.controller import entity_configs

ENTITY_TYPE = "groups"


def alter(zk: KazooClient, name: str, configs: dict[str, str]) -> None:
    """Make ``configs`` the group's whole set (empty: remove it)."""
    if configs:
        entity_configs.modify(zk, ENTITY_TYPE, name, lambda _: dict(configs))
        return
    try:
        zk.delete(entity_configs.path(ENTITY_TYPE, name))
    except NoNodeError:
        pass
    entity_configs.notify_change(zk, ENTITY_TYPE, name)


def read_all(zk: KazooClient, watch: Callable[[Any], None] | None = None) -> dict[str, dict]:
    """Every group with configs, as ``BrokerServer.apply_group_configs`` takes them."""
    out: dict[str, dict[str, str]] = {}
    for name in entity_configs.entities(zk, ENTITY_TYPE, watch):
        configs = entity_configs.read(zk, ENTITY_TYPE, name)
        if configs:
            out[name] = configs
    return out


class GroupConfigOps:
    """AlterConfigs and IncrementalAlterConfigs of a GROUP resource in cluster mode:
    written to ZooKeeper and this broker refreshed before the client is answered (the
    others follow on their next pass)."""

    zk: KazooClient
    sync_now: Callable[[], None]

    def alter_group_configs(self, op: dict[str, Any]) -> None:
        args = json.loads(op["args"])
        alter(self.zk, str(args["name"]), {str(k): str(v) for k, v in args["configs"].items()})
        self.sync_now()


__all__ = ["ENTITY_TYPE", "GroupConfigOps", "alter", "read_all"]
