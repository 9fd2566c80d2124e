"""PKCS12 keystores and truststores, made at test time by `openssl pkcs12` and `keytool`
(the two tools that write them in practice), on a broker's SSL listener requiring client
certificates; Java's console tools connect with a PKCS12 client keystore. A wrong password
and a JKS store stop the broker with a message naming the key."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from tests.security.certs import Pem
from tests.security.clients import VALUES, confluent_round_trip, create_topic
from tests.security.test_kafka_tools import address, properties, tool

PASSWORD = "store-secret"


def run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (cmd, done.stdout, done.stderr)


def openssl_keystore(pem: Pem, ca: Pem, out: Path) -> Path:
    """A key entry with its chain, as `openssl pkcs12 -export` writes it (PBES2/AES)."""
    run(
        "openssl",
        "pkcs12",
        "-export",
        "-in",
        str(pem.cert),
        "-inkey",
        str(pem.key),
        "-certfile",
        str(ca.cert),
        "-name",
        "server",
        "-out",
        str(out),
        "-passout",
        f"pass:{PASSWORD}",
    )
    return out


def keytool_truststore(ca: Pem, out: Path) -> Path:
    """A Java truststore: one trusted-certificate entry, as `keytool -importcert` writes."""
    run(
        "keytool",
        "-importcert",
        "-noprompt",
        "-alias",
        "ca",
        "-file",
        str(ca.cert),
        "-keystore",
        str(out),
        "-storetype",
        "PKCS12",
        "-storepass",
        PASSWORD,
    )
    return out


@pytest.fixture(scope="module")
def stores(pki: tuple[Path, Pem, Pem, Pem, Pem]) -> dict[str, Path]:
    directory, ca, server, client, _stranger = pki
    return {
        "server": openssl_keystore(server, ca, directory / "server.p12"),
        "client": openssl_keystore(client, ca, directory / "client.p12"),
        "trust": keytool_truststore(ca, directory / "truststore.p12"),
    }


def pkcs12_config(stores: dict[str, Path], **overrides: str) -> dict[str, str]:
    return {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(stores["server"]),
        "ssl.keystore.password": PASSWORD,
        "ssl.key.password": PASSWORD,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(stores["trust"]),
        "ssl.truststore.password": PASSWORD,
        "ssl.client.auth": "required",
        **overrides,
    }


@pytest.fixture(scope="module")
def broker(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path_factory.mktemp("p12"), config=pkcs12_config(stores)) as b:
        yield b


def test_confluent_over_pkcs12_listener(
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
    create_topic(conf, "p12-confluent")
    assert confluent_round_trip(conf, "p12-confluent") == VALUES


def test_java_console_tools_with_pkcs12_client_stores(
    broker: Broker, stores: dict[str, Path], tmp_path: Path
) -> None:
    config = properties(
        tmp_path / "client.properties",
        {
            "security.protocol": "SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(stores["client"]),
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(stores["trust"]),
            "ssl.truststore.password": PASSWORD,
        },
    )
    bootstrap = address(broker, "SSL")
    tool(
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server",
        bootstrap,
        "--producer.config",
        str(config),
        "--topic",
        "p12-java",
        stdin="\n".join(VALUES) + "\n",
    )
    got = tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        bootstrap,
        "--consumer.config",
        str(config),
        "--topic",
        "p12-java",
        "--from-beginning",
        "--max-messages",
        str(len(VALUES)),
        "--timeout-ms",
        "30000",
    )
    assert got.split() == VALUES


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ssl.keystore.password": "wrong", "ssl.key.password": "wrong"}, "ssl.keystore.password"),
        ({"ssl.truststore.password": "wrong"}, "ssl.truststore.password"),
        (
            {"ssl.keystore.type": "JKS"},
            r"Invalid value JKS for configuration ssl\.keystore\.type: JKS stores are not "
            "supported",
        ),
        ({"listener.name.ssl.ssl.truststore.type": "JKS"}, "listener.name.ssl.ssl.truststore"),
        ({"ssl.keystore.password": ""}, "ssl.keystore"),
    ],
)
def test_bad_stores_are_refused_naming_the_key(
    stores: dict[str, Path],
    tmp_path: Path,
    overrides: dict[str, str],
    message: str,
) -> None:
    config = pkcs12_config(stores, **overrides)
    if overrides.get("ssl.keystore.password") == "":
        del config["ssl.keystore.password"]
        del config["ssl.key.password"]
    with pytest.raises(Exception, match=message):
        Broker(log_dirs=tmp_path, config=config).start()
