"""Kafka 4.1.1's kafka-configs manages client quotas on kafkalite: users, clients, a user
with a client id, defaults; --describe reads them back; a bad key is refused naming it; the
quotas survive a restart (single node: the data dir)."""

from __future__ import annotations

from pathlib import Path

from kafkalite import Broker
from tests.quotas.conftest import kafka_configs, kafka_configs_failing


def test_kafka_configs_round_trip_and_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as broker:
        bootstrap = broker.bootstrap_servers
        kafka_configs(
            bootstrap,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
        )
        kafka_configs(
            bootstrap,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-default",
            "--add-config",
            "request_percentage=50",
        )
        kafka_configs(
            bootstrap,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--entity-type",
            "clients",
            "--entity-name",
            "app-1",
            "--add-config",
            "producer_byte_rate=4096",
        )
        out = kafka_configs(
            bootstrap, "--describe", "--entity-type", "users", "--entity-name", "alice"
        )
        assert "Quota configs for user-principal 'alice' are" in out, out
        assert "producer_byte_rate=1048576.0" in out and "consumer_byte_rate=2097152.0" in out
        out = kafka_configs(bootstrap, "--describe", "--entity-type", "clients", "--entity-default")
        assert "request_percentage=50.0" in out, out
        out = kafka_configs(
            bootstrap,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--entity-type",
            "clients",
            "--entity-name",
            "app-1",
        )
        assert "producer_byte_rate=4096.0" in out, out
        kafka_configs(
            bootstrap,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--delete-config",
            "consumer_byte_rate",
        )
        bad = kafka_configs_failing(
            bootstrap,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "bob",
            "--add-config",
            "producer_byte_rate=12.5",
        )
        assert "producer_byte_rate" in bad, bad[-2000:]
    with Broker(log_dirs=data) as broker:
        out = kafka_configs(
            broker.bootstrap_servers,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
        )
        assert "producer_byte_rate=1048576.0" in out, out
        assert "consumer_byte_rate" not in out, out
