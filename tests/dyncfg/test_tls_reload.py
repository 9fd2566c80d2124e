"""Listener TLS reload without a restart (KIP-226): a new keystore or truststore given by
IncrementalAlterConfigs is checked first, then serves new connections while connections
already open keep theirs; a keystore that cannot be read is refused by key and the old
certificate stays in service."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from cryptography import x509

from kafkalite import Broker
from tests.security.certs import Authority, Pem

ROTATION_S = 5.0


def serial_of(pem: Pem) -> int:
    return x509.load_pem_x509_certificate(pem.cert.read_bytes()).serial_number


def served_serial(address: str, ca: Path, client: Pem | None = None) -> int:
    host, port = address.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        ctx.load_cert_chain(str(client.cert), str(client.key))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def alter(broker: Broker, **configs: str) -> None:
    client = AdminClient({"bootstrap.servers": address(broker, "PLAINTEXT")})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=entries)
    client.incremental_alter_configs([resource])[resource].result(timeout=20)


def address(broker: Broker, listener: str) -> str:
    for name, host, port in broker.addresses:
        if name == listener:
            return f"{host}:{port}"
    raise KeyError(listener)


def until(check: Callable[[], bool], timeout_s: float) -> float:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout_s, "not within the time allowed"
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path | Pem | Authority]:
    ca = Authority(tmp_path, "ca-one")
    other = Authority(tmp_path, "ca-two")
    return {
        "authority": ca,
        "ca": ca.pem.cert,
        "other_ca": other.pem.cert,
        "a": ca.issue("server-a", "localhost", server=True),
        "b": ca.issue("server-b", "localhost", server=True),
        "c": ca.issue("server-c", "localhost", server=True),
        "client_one": ca.issue("client-one", "one", server=False),
        "client_two": other.issue("client-two", "two", server=False),
    }


@pytest.fixture
def tls_broker(
    kafkalite_broker_factory: Callable[..., Broker], pki: dict, tmp_path: Path
) -> tuple[Broker, Path]:
    keystore = tmp_path / "keystore.pem"
    shutil.copy(pki["a"].bundle, keystore)
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(keystore),
        "listener.name.mtls.ssl.keystore.location": str(pki["a"].bundle),
        "listener.name.mtls.ssl.truststore.location": str(pki["ca"]),
        "listener.name.mtls.ssl.client.auth": "required",
        "num.partitions": 1,
    }
    return kafkalite_broker_factory(config=config), keystore


def test_a_new_keystore_serves_new_connections_and_old_ones_keep_consuming(
    tls_broker: tuple[Broker, Path], pki: dict, tmp_path: Path
) -> None:
    broker, _keystore = tls_broker
    pid = os.getpid()
    ssl_address = address(broker, "SSL")
    assert served_serial(ssl_address, pki["ca"]) == serial_of(pki["a"])

    topic = f"rotate-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": address(broker, "PLAINTEXT")})
    for i in range(5):
        producer.produce(topic, f"before-{i}".encode())
    assert producer.flush(30) == 0
    errors: list[KafkaError] = []
    consumer = Consumer(
        {
            "bootstrap.servers": ssl_address,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki["ca"]),
            "group.id": "rotation",
            "enable.auto.commit": False,
            "error_cb": errors.append,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])

    def read(n: int) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m.value().decode())
        return got

    assert read(5) == [f"before-{i}" for i in range(5)]

    # Certificate B in a new file.
    new_store = tmp_path / "keystore-b.pem"
    shutil.copy(pki["b"].bundle, new_store)
    alter(broker, **{"listener.name.ssl.ssl.keystore.location": str(new_store)})
    took = until(lambda: served_serial(ssl_address, pki["ca"]) == serial_of(pki["b"]), ROTATION_S)
    print(f"certificate B served {took * 1000:.0f} ms after the alteration")

    for i in range(5):
        producer.produce(topic, f"after-{i}".encode())
    assert producer.flush(30) == 0
    assert read(5) == [f"after-{i}" for i in range(5)]
    assert errors == []
    consumer.close()

    # Kafka's tools re-apply the same config after replacing the file: certificate C.
    shutil.copy(pki["c"].bundle, new_store)
    alter(broker, **{"listener.name.ssl.ssl.keystore.location": str(new_store)})
    until(lambda: served_serial(ssl_address, pki["ca"]) == serial_of(pki["c"]), ROTATION_S)
    assert os.getpid() == pid and broker.running


@pytest.mark.parametrize("bad", ["missing", "garbage"])
def test_a_keystore_that_cannot_be_read_is_refused_by_key(
    tls_broker: tuple[Broker, Path], pki: dict, tmp_path: Path, bad: str
) -> None:
    broker, _keystore = tls_broker
    path = tmp_path / f"{bad}.pem"
    if bad == "garbage":
        path.write_text("not a certificate\n")
    with pytest.raises(KafkaException) as e:
        alter(broker, **{"listener.name.ssl.ssl.keystore.location": str(path)})
    error = e.value.args[0]
    assert error.code() == KafkaError.INVALID_REQUEST, error  # as Kafka 4.1.1
    assert "listener.name.ssl.ssl.keystore.location" in error.str(), error
    assert served_serial(address(broker, "SSL"), pki["ca"]) == serial_of(pki["a"])


def test_a_pkcs12_keystore_with_a_wrong_password_is_refused_by_key(
    tls_broker: tuple[Broker, Path], pki: dict, tmp_path: Path
) -> None:
    broker, _keystore = tls_broker
    store = tmp_path / "b.p12"
    export = ["openssl", "pkcs12", "-export", "-name", "server", "-out", str(store)]
    pem = ["-in", str(pki["b"].cert), "-inkey", str(pki["b"].key), "-certfile", str(pki["ca"])]
    password = ["-passout", "pass:right-password"]
    done = subprocess.run([*export, *pem, *password], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    prefix = "listener.name.ssl.ssl.keystore"
    b = {f"{prefix}.type": "PKCS12", f"{prefix}.location": str(store)}
    with pytest.raises(KafkaException) as e:
        alter(broker, **b, **{f"{prefix}.password": "wrong-password"})
    error = e.value.args[0]
    assert error.code() == KafkaError.INVALID_REQUEST, error  # as Kafka 4.1.1
    # The store and the password it is opened with: a bad MAC cannot tell them apart.
    assert f"{prefix}.location" in error.str(), error
    assert "ssl.keystore.password" in error.str(), error
    assert "wrong-password" not in error.str(), error
    assert served_serial(address(broker, "SSL"), pki["ca"]) == serial_of(pki["a"])
    # The right password: B from then on, with no restart.
    alter(broker, **b, **{f"{prefix}.password": "right-password"})
    want = serial_of(pki["b"])
    until(lambda: served_serial(address(broker, "SSL"), pki["ca"]) == want, ROTATION_S)


def test_a_truststore_gaining_a_ca_accepts_its_clients(
    tls_broker: tuple[Broker, Path], pki: dict, tmp_path: Path
) -> None:
    broker, _keystore = tls_broker
    mtls = address(broker, "MTLS")

    def metadata(client: Pem) -> bool:
        admin = AdminClient(
            {
                "bootstrap.servers": mtls,
                "security.protocol": "SSL",
                "ssl.ca.location": str(pki["ca"]),
                "ssl.certificate.location": str(client.cert),
                "ssl.key.location": str(client.key),
            }
        )
        try:
            return bool(admin.list_topics(timeout=5).brokers)
        except KafkaException:
            return False

    assert metadata(pki["client_one"])
    assert not metadata(pki["client_two"])
    both = tmp_path / "trust-both.pem"
    both.write_bytes(pki["ca"].read_bytes() + pki["other_ca"].read_bytes())
    alter(broker, **{"listener.name.mtls.ssl.truststore.location": str(both)})
    until(lambda: metadata(pki["client_two"]), ROTATION_S)
    assert metadata(pki["client_one"])


def test_a_keystore_naming_the_broker_otherwise_needs_ssl_allow_dn_and_san_changes(
    kafkalite_broker_factory: Callable[..., Broker],
    tls_broker: tuple[Broker, Path],
    pki: dict,
    tmp_path: Path,
) -> None:
    broker, keystore = tls_broker
    renamed = pki["authority"].issue("server-renamed", "broker-renamed", server=True)
    unnamed = pki["authority"].issue("server-no-san", "localhost", server=False)  # no SAN
    key = "listener.name.ssl.ssl.keystore.location"
    for store, refused in ((renamed, "DistinguishedName"), (unnamed, "SubjectAltNames")):
        with pytest.raises(KafkaException) as e:
            alter(broker, **{key: str(store.bundle)})
        error = e.value.args[0]
        assert error.code() == KafkaError.INVALID_REQUEST, error
        assert key in error.str() and f"Keystore {refused} do" in error.str(), error
        assert served_serial(address(broker, "SSL"), pki["ca"]) == serial_of(pki["a"])
    # The same keystores, on a listener that allows both changes.
    allowing = kafkalite_broker_factory(
        config={
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            key: str(keystore),
            "listener.name.ssl.ssl.allow.dn.changes": "true",
            "listener.name.ssl.ssl.allow.san.changes": "true",
        }
    )
    alter(allowing, **{key: str(renamed.bundle)})
    until(lambda: served_common_name(address(allowing, "SSL"), pki["ca"]) == "broker-renamed", 5)


def served_common_name(address: str, ca: Path) -> str:
    """The CN of the certificate served at `address` (no host name check: it may name
    another host)."""
    host, port = address.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with ctx.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    return str(cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value)
