"""ListConfigResources against real clients: kafka-client-metrics --list (filtered to
client-metrics subscriptions) and kafka-python's list_config_resources (no filter: every
type Kafka 4.1.1 lists: topics, the brokers and their loggers, the subscriptions, and the
groups with configs)."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from kafkalite import Broker
from tests.client_metrics.conftest import client_metrics


def test_the_tools_list_what_exists() -> None:
    with Broker(config={"node.id": 3}) as broker:
        bootstrap = broker.bootstrap_servers
        assert client_metrics(bootstrap, "--list").strip() == ""
        for name in ("b-sub", "a-sub"):
            client_metrics(bootstrap, "--alter", "--name", name, "--metrics", "*")
        assert sorted(client_metrics(bootstrap, "--list").split()) == ["a-sub", "b-sub"]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic("listed", 1, 1)])
            admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.GROUP,
                        "configured-group",
                        configs={"consumer.session.timeout.ms": "50000"},
                    )
                ]
            )
            listed = admin.list_config_resources()
            only = admin.list_config_resources(["CLIENT_METRICS"])
        finally:
            admin.close()
    assert sorted(listed["client_metrics"]) == ["a-sub", "b-sub"], listed
    assert "listed" in listed["topic"], listed
    assert listed["broker"] == ["3"] and listed["broker_logger"] == ["3"], listed
    assert listed["group"] == ["configured-group"], listed
    assert set(only) == {"client_metrics"}, only
