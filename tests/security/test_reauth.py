"""Re-authentication (KIP-368): with `connections.max.reauth.ms` the broker gives each SASL
session a lifetime (cut to an OAUTHBEARER token's expiry), closes a connection whose
session ended without re-authentication, and lets librdkafka, kafka-python and the Java
producer renew theirs on the same connection and keep working."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.broker import rawproto
from tests.security.clients import create_topic
from tests.security.conftest import plain_jaas

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
LIFETIME_MS = 3000
RENEWED = "Re-authenticated User:"
EXPIRED = "expired without re-authentication"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "connections.max.reauth.ms": str(LIFETIME_MS),
        # A per-mechanism value wins over the broker-wide one, as in Kafka.
        "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "60000",
    }
    with Broker(log_dirs=tmp_path_factory.mktemp("reauth"), config=config) as b:
        yield b


def address(broker: Broker) -> str:
    return next(f"{h}:{p}" for n, h, p in broker.addresses if n == "SASL_PLAINTEXT")


# A client that never re-authenticates: SaslHandshake v1 and SaslAuthenticate v1 by hand.
def handshake(sock: object, mechanism: str, correlation_id: int) -> int:
    body = struct.pack(">h", len(mechanism)) + mechanism.encode()
    sock.sendall(rawproto.frame(rawproto.header(17, 1, correlation_id) + body))  # type: ignore[attr-defined]
    answer = rawproto.read_frame(sock)  # type: ignore[arg-type]
    return int(struct.unpack(">h", answer[4:6])[0])


def authenticate(sock: object, token: bytes, correlation_id: int) -> tuple[int, int]:
    """(error code, session_lifetime_ms) of a one-step SaslAuthenticate v1."""
    body = struct.pack(">i", len(token)) + token
    sock.sendall(rawproto.frame(rawproto.header(36, 1, correlation_id) + body))  # type: ignore[attr-defined]
    answer = rawproto.read_frame(sock)  # type: ignore[arg-type]
    pos = 4
    code = struct.unpack(">h", answer[pos : pos + 2])[0]
    pos += 2
    message_len = struct.unpack(">h", answer[pos : pos + 2])[0]
    pos += 2 + max(message_len, 0)
    auth_len = struct.unpack(">i", answer[pos : pos + 4])[0]
    pos += 4 + max(auth_len, 0)
    return code, struct.unpack(">q", answer[pos : pos + 8])[0]


def plain(user: str) -> bytes:
    return f"\0{user}\0{USERS[user]}".encode()


def oauth(sub: str, expires_in_s: int) -> bytes:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = int(time.time())
    token = f"{part({'alg': 'none'})}.{part({'sub': sub, 'iat': now, 'exp': now + expires_in_s})}."
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def api_versions(sock: object, correlation_id: int) -> bool:
    """Whether the broker answers an ApiVersions request (False: it closed)."""
    try:
        sock.sendall(rawproto.frame(rawproto.header(18, 0, correlation_id)))  # type: ignore[attr-defined]
        return struct.unpack(">i", rawproto.read_frame(sock)[:4])[0] == correlation_id  # type: ignore[arg-type]
    except (ConnectionError, OSError):
        return False


def test_lifetime_expiry_and_renewal_on_the_wire(
    broker: Broker, capfd: pytest.CaptureFixture[str]
) -> None:
    capfd.readouterr()
    # Not renewed: answered while the session lasts, closed at the first request after.
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    assert authenticate(sock, plain("alice"), 2) == (0, LIFETIME_MS)
    assert api_versions(sock, 3)
    time.sleep(LIFETIME_MS / 1000 + 0.5)
    assert not api_versions(sock, 4)
    assert EXPIRED in capfd.readouterr().err
    # Renewed before the end: still served after the first lifetime.
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    assert authenticate(sock, plain("alice"), 2) == (0, LIFETIME_MS)
    time.sleep(LIFETIME_MS / 1000 * 0.7)
    assert handshake(sock, "PLAIN", 3) == 0
    assert authenticate(sock, plain("alice"), 4) == (0, LIFETIME_MS)
    time.sleep(LIFETIME_MS / 1000 * 0.7)
    assert api_versions(sock, 5)
    assert RENEWED + "alice" in capfd.readouterr().err
    sock.close()
    # A renewal may change neither the principal nor the mechanism.
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    assert authenticate(sock, plain("alice"), 2)[0] == 0
    assert handshake(sock, "PLAIN", 3) == 0
    assert authenticate(sock, plain("bob"), 4)[0] == 58  # SASL_AUTHENTICATION_FAILED
    assert rawproto.closed_by_peer(sock)
    assert "Cannot change principals during re-authentication" in capfd.readouterr().err
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    assert authenticate(sock, plain("alice"), 2)[0] == 0
    assert handshake(sock, "OAUTHBEARER", 3) == 33  # UNSUPPORTED_SASL_MECHANISM
    assert rawproto.closed_by_peer(sock)


def test_oauthbearer_token_bounds_the_session(broker: Broker) -> None:
    # The mechanism's own connections.max.reauth.ms (60 s) applies, cut to the token's
    # remaining life (~20 s).
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "OAUTHBEARER", 1) == 0
    code, lifetime = authenticate(sock, oauth("carol", 20), 2)
    assert code == 0 and 18_000 <= lifetime <= 20_000, (code, lifetime)
    sock.close()
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "OAUTHBEARER", 1) == 0
    code, lifetime = authenticate(sock, oauth("carol", 3600), 2)
    assert (code, lifetime) == (0, 60_000)
    sock.close()


def test_librdkafka_re_authenticates_and_keeps_producing(
    broker: Broker, capfd: pytest.CaptureFixture[str]
) -> None:
    conf = {
        "bootstrap.servers": address(broker),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": USERS["alice"],
    }
    create_topic(conf, "reauth-rdkafka")
    capfd.readouterr()
    errors: list[object] = []
    delivered: list[object] = []
    producer = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + LIFETIME_MS / 1000 * 3
    sent = 0
    while time.monotonic() < deadline:
        producer.produce("reauth-rdkafka", b"v", on_delivery=lambda e, _m: delivered.append(e))
        sent += 1
        producer.flush(10)
        time.sleep(0.3)
    assert delivered == [None] * sent, delivered
    assert not errors, errors
    logged = capfd.readouterr().err
    assert logged.count(RENEWED + "alice") >= 2, logged[-3000:]
    assert EXPIRED not in logged, logged[-3000:]


def test_kafka_python_re_authenticates(broker: Broker, capfd: pytest.CaptureFixture[str]) -> None:
    from kafka import KafkaProducer

    capfd.readouterr()
    producer = KafkaProducer(
        bootstrap_servers=address(broker),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="bob",
        sasl_plain_password=USERS["bob"],
    )
    deadline = time.monotonic() + LIFETIME_MS / 1000 * 3
    while time.monotonic() < deadline:
        producer.send("reauth-python", b"v").get(timeout=10)
        time.sleep(0.3)
    producer.close()
    logged = capfd.readouterr().err
    assert RENEWED + "bob" in logged, logged[-3000:]
    assert EXPIRED not in logged, logged[-3000:]


def test_java_producer_re_authenticates(
    broker: Broker, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{USERS["admin"]}";\n'
    )
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "org.apache.kafka.tools.ConsoleProducer",
        [
            *("--bootstrap-server", address(broker), "--producer.config", str(config)),
            *("--topic", "reauth-java", "--property", "linger.ms=0"),
        ],
    )
    capfd.readouterr()
    with subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None
        deadline = time.monotonic() + LIFETIME_MS / 1000 * 4
        while time.monotonic() < deadline:
            proc.stdin.write("v\n")
            proc.stdin.flush()
            time.sleep(0.3)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    logged = capfd.readouterr().err
    assert RENEWED + "admin" in logged, logged[-3000:]
    assert EXPIRED not in logged, logged[-3000:]
