"""Cluster mode: kafka-configs through one broker writes the quotas to ZooKeeper as Kafka
kept them (``/config/users/<user>`` with ``{"version":1,"config":{...}}``, a change
notification), keeping keys it does not own (a SCRAM credential beside them), and every
broker serves them."""

from __future__ import annotations

import json
import time

from kazoo.client import KazooClient

from kafkalite.cluster import Cluster
from tests.quotas.conftest import kafka_configs


def test_quotas_live_in_zookeeper_and_reach_every_broker(kafkalite_cluster: Cluster) -> None:
    brokers = [b.bootstrap_servers for b in kafkalite_cluster.brokers]
    zk = KazooClient(hosts=kafkalite_cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:
        # Another owner's key in the same znode (as SCRAM credentials are kept).
        zk.create(
            "/config/users/alice",
            json.dumps({"version": 1, "config": {"SCRAM-SHA-256": "salt=c2FsdA==,x=1"}}).encode(),
            makepath=True,
        )
        kafka_configs(
            brokers[0],
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--add-config",
            "producer_byte_rate=1048576",
        )
        kafka_configs(
            brokers[0],
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--entity-type",
            "clients",
            "--entity-default",
            "--add-config",
            "consumer_byte_rate=2048",
        )
        data, _ = zk.get("/config/users/alice")
        config = json.loads(data)
        assert config["version"] == 1
        assert config["config"]["producer_byte_rate"] == "1048576"
        assert config["config"]["SCRAM-SHA-256"] == "salt=c2FsdA==,x=1", config
        data, _ = zk.get("/config/users/alice/clients/<default>")
        assert json.loads(data)["config"] == {"consumer_byte_rate": "2048"}
        changes = [
            json.loads(zk.get(f"/config/changes/{c}")[0])
            for c in zk.get_children("/config/changes")
        ]
        assert {"version": 2, "entity_path": "users/alice"} in changes, changes
        # Every broker serves them (the others within a ZooKeeper pass).
        for bootstrap in brokers:
            deadline = time.monotonic() + 15
            while True:
                out = kafka_configs(
                    bootstrap, "--describe", "--entity-type", "users", "--entity-name", "alice"
                )
                if "producer_byte_rate=1048576.0" in out:
                    break
                assert time.monotonic() < deadline, (bootstrap, out)
                time.sleep(0.5)
    finally:
        zk.stop()
        zk.close()
