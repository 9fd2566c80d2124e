"""Client-metrics subscriptions (KIP-714) in ZooKeeper, where Kafka's ZooKeeper mode kept
them: ``/config/client-metrics/<name>`` holding ``{"version":1,"config":{...}}``, each
change announced with a ``/config/changes/config_change_`` notification. A subscription
whose last key is deleted loses its znode. Every broker reads the whole set on each
ZooKeeper pass and pushes it into its Rust side (``BrokerServer.apply_client_metrics``),
which checked each change before it came here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalite.controller import entity_configs

ENTITY_TYPE = "client-metrics"


def alter(zk: KazooClient, name: str, configs: dict[str, str]) -> None:
    """Make ``configs`` the subscription's whole set (empty: remove it)."""
    if configs:
        entity_configs.modify(zk, ENTITY_TYPE, name, lambda _: dict(configs))
        return
    try:
        zk.delete(entity_configs.path(ENTITY_TYPE, name))
    except NoNodeError:
        pass
    entity_configs.notify_change(zk, ENTITY_TYPE, name)


def read_all(zk: KazooClient, watch: Callable[[Any], None] | None = None) -> dict[str, dict]:
    """Every subscription with keys, as ``BrokerServer.apply_client_metrics`` takes them."""
    out: dict[str, dict[str, str]] = {}
    for name in entity_configs.entities(zk, ENTITY_TYPE, watch):
        configs = entity_configs.read(zk, ENTITY_TYPE, name)
        if configs:
            out[name] = configs
    return out


class ClientMetricsOps:
    """IncrementalAlterConfigs and AlterConfigs of a client-metrics resource in cluster
    mode: written to ZooKeeper and this broker refreshed before the client is answered
    (the others follow on their next pass)."""

    zk: KazooClient
    sync_now: Callable[[], None]

    def alter_client_metrics(self, op: dict[str, Any]) -> None:
        args = json.loads(op["args"])
        alter(self.zk, str(args["name"]), {str(k): str(v) for k, v in args["configs"].items()})
        self.sync_now()


__all__ = ["ENTITY_TYPE", "ClientMetricsOps", "alter", "read_all"]
