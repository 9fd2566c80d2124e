"""Cluster mode: kafka-client-metrics through one broker writes the subscription to
ZooKeeper where Kafka's ZooKeeper mode kept it (``/config/client-metrics/<name>``, a change
notification), every broker serves it, and --delete removes the znode."""

from __future__ import annotations

import json
import time

from kazoo.client import KazooClient

from kafkalite.cluster import Cluster
from tests.client_metrics.conftest import client_metrics


def _until(bootstrap: str, name: str, present: str | None, absent: str | None) -> None:
    deadline = time.monotonic() + 15
    while True:
        out = client_metrics(bootstrap, "--describe", "--name", name)
        if (present is None or present in out) and (absent is None or absent not in out):
            return
        assert time.monotonic() < deadline, (bootstrap, out)
        time.sleep(0.5)


def test_subscriptions_live_in_zookeeper_and_reach_every_broker(
    kafkalite_cluster: Cluster,
) -> None:
    brokers = [b.bootstrap_servers for b in kafkalite_cluster.brokers]
    zk = KazooClient(hosts=kafkalite_cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:
        client_metrics(
            brokers[0],
            "--alter",
            "--name",
            "java clients",
            "--metrics",
            "org.apache.kafka.",
            "--interval",
            "2000",
            "--match",
            "client_software_name=apache-kafka-java",
        )
        data, _ = zk.get("/config/client-metrics/java%20clients")
        assert json.loads(data) == {
            "version": 1,
            "config": {
                "interval.ms": "2000",
                "match": "client_software_name=apache-kafka-java",
                "metrics": "org.apache.kafka.",
            },
        }
        changes = [
            json.loads(zk.get(f"/config/changes/{c}")[0])
            for c in zk.get_children("/config/changes")
        ]
        assert {"version": 2, "entity_path": "client-metrics/java%20clients"} in changes
        for bootstrap in brokers:
            _until(bootstrap, "java clients", "interval.ms=2000", None)
        client_metrics(brokers[-1], "--delete", "--name", "java clients")
        assert zk.exists("/config/client-metrics/java%20clients") is None
        for bootstrap in brokers:
            _until(bootstrap, "java clients", None, "interval.ms=2000")
    finally:
        zk.stop()
        zk.close()
