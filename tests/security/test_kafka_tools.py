"""Kafka's own Java tools against a secured broker: the console producer and consumer
over SASL_SSL with SCRAM-SHA-512 and over mTLS (client.properties), `kafka-configs` adding
a SCRAM-SHA-256 user, and `kafka-acls` managing ACLs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ScramMechanism

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.security.certs import Pem
from tests.security.clients import VALUES, confluent_round_trip, create_topic
from tests.security.conftest import plain_jaas

USERS = {"admin": "admin-secret"}


def tool(main_class: str, *args: str, stdin: str | None = None) -> str:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, list(args))
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (main_class, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def properties(path: Path, items: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in items.items()))
    return path


@pytest.fixture(scope="module")
def broker(
    pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Broker]:
    _directory, ca, server, _client, _stranger = pki
    config = {
        "listeners": "SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.bundle),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(USERS),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:CN=alice-client,OU=ServiceUsers,O=kafkalite tests",
    }
    with Broker(log_dirs=tmp_path_factory.mktemp("tools"), config=config) as b:
        yield b


def address(broker: Broker, listener: str) -> str:
    return next(f"{h}:{p}" for n, h, p in broker.addresses if n == listener)


def sasl_properties(tmp: Path, ca: Pem, mechanism: str, user: str, password: str) -> Path:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return properties(
        tmp / f"{user}-{mechanism}.properties",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f"org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
        },
    )


def test_java_tools_over_sasl_ssl_and_mtls(
    broker: Broker, pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path: Path
) -> None:
    _directory, ca, _server, client, _stranger = pki
    bootstrap = address(broker, "SASL_SSL")
    admin = sasl_properties(tmp_path, ca, "PLAIN", "admin", USERS["admin"])
    # kafka-configs adds a SCRAM user (AlterUserScramCredentials), then kafka-acls lets it
    # write and read the topic and its group.
    tool(
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(admin),
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[iterations=8192,password=grace-secret]",
        "--entity-type",
        "users",
        "--entity-name",
        "grace",
    )
    # (kafka-configs --describe for users also needs DescribeClientQuotas, not served yet.)
    admin_client = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
            "ssl.ca.location": str(ca.cert),
        }
    )
    infos = admin_client.describe_user_scram_credentials(["grace"])
    grace_info = infos["grace"].result(timeout=20).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in grace_info] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    for op in ["Write", "Read", "Describe"]:
        tool(
            "org.apache.kafka.tools.AclCommand",
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            str(admin),
            "--add",
            "--allow-principal",
            "User:grace",
            "--operation",
            op,
            "--topic",
            "java",
        )
    tool(
        "org.apache.kafka.tools.AclCommand",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(admin),
        "--add",
        "--allow-principal",
        "User:grace",
        "--operation",
        "Read",
        "--group",
        "java-group",
    )
    listed = tool(
        "org.apache.kafka.tools.AclCommand",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(admin),
        "--list",
        "--topic",
        "java",
    )
    assert "principal=User:grace, host=*, operation=WRITE, permissionType=ALLOW" in listed, listed
    tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        str(admin),
        "--create",
        "--topic",
        "java",
        "--partitions",
        "1",
    )
    grace = sasl_properties(tmp_path, ca, "SCRAM-SHA-512", "grace", "grace-secret")
    tool(
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server",
        bootstrap,
        "--producer.config",
        str(grace),
        "--topic",
        "java",
        stdin="\n".join(VALUES) + "\n",
    )
    got = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        bootstrap,
        "--consumer.config",
        str(grace),
        "--topic",
        "java",
        "--group",
        "java-group",
        "--from-beginning",
        "--max-messages",
        str(len(VALUES)),
        "--timeout-ms",
        "30000",
    )
    assert got.split() == VALUES
    # mTLS: the client certificate's principal (mapped by DEFAULT) is a super user.
    mtls = properties(
        tmp_path / "mtls.properties",
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(client.bundle),
        },
    )
    got = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        address(broker, "SSL"),
        "--consumer.config",
        str(mtls),
        "--topic",
        "java",
        "--from-beginning",
        "--max-messages",
        str(len(VALUES)),
        "--timeout-ms",
        "30000",
    )
    assert got.split() == VALUES


def test_confluent_mtls_principal_is_the_certificate_subject(
    broker: Broker, pki: tuple[Path, Pem, Pem, Pem, Pem]
) -> None:
    _directory, ca, _server, client, _stranger = pki
    conf = {
        "bootstrap.servers": address(broker, "SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca.cert),
        "ssl.certificate.location": str(client.cert),
        "ssl.key.location": str(client.key),
    }
    # Only a super user may create topics and use groups here (no ACLs for them).
    create_topic(conf, "mtls-super")
    assert confluent_round_trip(conf, "mtls-super") == VALUES
