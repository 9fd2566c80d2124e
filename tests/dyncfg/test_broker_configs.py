"""Dynamic broker configs on a single node (kept in the data dir): Kafka's precedence
per-broker dynamic > cluster default > server.properties > default, DescribeConfigs'
sources and synonyms, Kafka's refusals, and Kafka 4.1's ``kafka-configs`` managing them."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kafkalite import Broker
from kafkalite.bench import kafka_ref


def kafka_configs(broker: Broker, *args: str, ok: bool = True) -> str:
    """Kafka 4.1's ``kafka-configs`` against the broker: its stdout (stderr if not ``ok``)."""
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "kafka.admin.ConfigCommand",
        ["--bootstrap-server", broker.bootstrap_servers, "--entity-type", "brokers", *args],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == ok, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout if ok else done.stdout + done.stderr


def admin(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def alter(client: AdminClient, name: str, op: AlterConfigOpType, **configs: str) -> None:
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=op) for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)
    client.incremental_alter_configs([resource])[resource].result(timeout=20)


def describe(client: AdminClient, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.BROKER, name)
    return client.describe_configs([resource])[resource].result(timeout=20)


def test_precedence_sources_and_synonyms_survive_a_restart(
    kafkalite_broker_factory: Callable[..., Broker], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    config = {"log.cleaner.threads": "2"}
    broker = kafkalite_broker_factory(log_dirs=data, config=config)
    client = admin(broker)
    key = "log.cleaner.threads"
    entry = describe(client, "1")[key]
    assert (entry.value, ConfigSource(entry.source)) == ("2", ConfigSource.STATIC_BROKER_CONFIG)

    # librdkafka cannot name the cluster-wide entity (""): Kafka's own tool can.
    kafka_configs(broker, "--entity-default", "--alter", "--add-config", f"{key}=3")
    out = kafka_configs(broker, "--entity-default", "--describe")
    assert f"{key}=3 sensitive=false" in out, out
    entry = describe(client, "1")[key]
    assert entry.value == "3"
    alter(client, "1", AlterConfigOpType.SET, log_cleaner_threads="4")
    entry = describe(client, "1")[key]
    assert (entry.value, ConfigSource(entry.source)) == ("4", ConfigSource.DYNAMIC_BROKER_CONFIG)
    # confluent-kafka keys synonyms by name (all the same here): Kafka's tool lists them.
    out = kafka_configs(broker, "--entity-name", "1", "--describe")
    expected = ", ".join(
        f"{source}:{key}={value}"
        for source, value in [
            ("DYNAMIC_BROKER_CONFIG", 4),
            ("DYNAMIC_DEFAULT_BROKER_CONFIG", 3),
            ("STATIC_BROKER_CONFIG", 2),
            ("DEFAULT_CONFIG", 1),
        ]
    )
    assert f"{key}=4 sensitive=false synonyms={{{expected}}}" in out, out

    broker.stop()
    broker = kafkalite_broker_factory(log_dirs=data, config=config)
    client = admin(broker)
    entry = describe(client, "1")[key]
    assert (entry.value, ConfigSource(entry.source)) == ("4", ConfigSource.DYNAMIC_BROKER_CONFIG)

    alter(client, "1", AlterConfigOpType.DELETE, log_cleaner_threads="")
    entry = describe(client, "1")[key]
    assert (entry.value, ConfigSource(entry.source)) == (
        "3",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )


@pytest.mark.parametrize(
    ("entity", "key", "value", "words"),
    [
        ("1", "broker.id", "7", "Cannot update these configs dynamically"),
        ("1", "ssl.keystore.location", "/x.pem", "only per-listener"),
        ("1", "log.cleaner.threads", "-3", "log.cleaner.threads"),
        ("1", "listener.name.ssl.ssl.client.auth", "sometimes", "ssl.client.auth"),
    ],
)
def test_kafkas_refusals_name_the_key(
    kafkalite_broker: Broker, entity: str, key: str, value: str, words: str
) -> None:
    client = admin(kafkalite_broker)
    with pytest.raises(KafkaException) as e:
        alter(client, entity, AlterConfigOpType.SET, **{key.replace(".", "_"): value})
    assert words in e.value.args[0].str(), e.value
    entry = describe(client, "1").get(key)
    assert entry is None or ConfigSource(entry.source) != ConfigSource.DYNAMIC_BROKER_CONFIG


def test_kafka_configs_tool_alters_and_describes_a_broker(kafkalite_broker: Broker) -> None:
    broker = kafkalite_broker
    secret = "jaas-secret-Q7"
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="{secret}";'
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    one = ("--entity-name", "1")
    kafka_configs(broker, *one, "--alter", "--add-config", f"log.cleaner.threads=5,{key}=[{jaas}]")
    out = kafka_configs(broker, *one, "--describe")
    assert "log.cleaner.threads=5 sensitive=false" in out, out
    assert f"{key}=null sensitive=true" in out, out
    assert secret not in out
    kafka_configs(broker, "--entity-default", "--alter", "--add-config", "log.cleaner.threads=6")
    out = kafka_configs(
        broker,
        "--entity-default",
        "--alter",
        "--add-config",
        "listener.name.ssl.ssl.keystore.location=/x.pem",
        ok=False,
    )
    assert "broker id must be specified" in out, out
    kafka_configs(broker, *one, "--alter", "--delete-config", "log.cleaner.threads")
    entry = describe(admin(broker), "1")["log.cleaner.threads"]
    assert (entry.value, ConfigSource(entry.source)) == (
        "6",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
