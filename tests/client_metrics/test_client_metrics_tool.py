"""Kafka 4.1.1's kafka-client-metrics manages client-metrics subscriptions on kafkalite:
--alter creates and changes one, --describe shows its keys, bad values are refused with
Kafka's messages, --delete removes it, and a single node keeps them across a restart."""

from __future__ import annotations

from pathlib import Path

from kafkalite import Broker
from tests.client_metrics.conftest import client_metrics, client_metrics_failing


def test_alter_describe_delete_and_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as broker:
        bootstrap = broker.bootstrap_servers
        out = client_metrics(
            bootstrap,
            "--alter",
            "--name",
            "producers",
            "--metrics",
            "org.apache.kafka.producer.",
            "--interval",
            "1000",
            "--match",
            "client_id=app-.*,client_software_name=apache-kafka-java",
        )
        assert "Altered client metrics config for producers." in out
        client_metrics(bootstrap, "--alter", "--name", "everything", "--metrics", "*")
        out = client_metrics(bootstrap, "--describe", "--name", "producers")
        assert "interval.ms=1000" in out, out
        assert "match=client_id=app-.*,client_software_name=apache-kafka-java" in out, out
        assert "metrics=org.apache.kafka.producer." in out, out
        out = client_metrics_failing(
            bootstrap, "--alter", "--name", "producers", "--interval", "50"
        )
        assert "Invalid value 50 for interval.ms" in out, out
        out = client_metrics_failing(
            bootstrap, "--alter", "--name", "producers", "--match", "client_colour=red"
        )
        assert "Illegal client matching pattern: client_colour=red" in out, out
        # Unchanged by the refused alterations.
        out = client_metrics(bootstrap, "--describe", "--name", "producers")
        assert "interval.ms=1000" in out, out
        client_metrics(bootstrap, "--delete", "--name", "everything")
    with Broker(log_dirs=data) as broker:
        bootstrap = broker.bootstrap_servers
        out = client_metrics(bootstrap, "--describe", "--name", "producers")
        assert "interval.ms=1000" in out, out
        out = client_metrics(bootstrap, "--describe", "--name", "everything")
        assert "metrics=*" not in out, out
