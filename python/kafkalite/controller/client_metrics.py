"""Client-metrics subscriptions (KIP-714) in ZooKeeper, where Kafka's ZooKeeper mode kept
them: ``/config/client-metrics/<name>`` holding ``{"version":1,"config":{...}}``, each
change announced with a ``/config/changes/config_change_`` notification. A subscription
whose last key is deleted loses its znode. Every broker reads the whole set on each
ZooKeeper pass (``entity_configs.read_all``) and pushes it into its Rust side
(``BrokerServer.apply_client_metrics``), which checked each change before it came here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from kafkalite.controller import entity_configs

ENTITY_TYPE = "client-metrics"


class ClientMetricsOps:
    """IncrementalAlterConfigs and AlterConfigs of a client-metrics resource in cluster
    mode: written to ZooKeeper and this broker refreshed before the client is answered
    (the others follow on their next pass)."""

    zk: KazooClient
    sync_now: Callable[[], None]

    def alter_client_metrics(self, op: dict[str, Any]) -> None:
        entity_configs.replace_whole(self.zk, ENTITY_TYPE, *entity_configs.whole_set_args(op))
        self.sync_now()


__all__ = ["ENTITY_TYPE", "ClientMetricsOps"]
