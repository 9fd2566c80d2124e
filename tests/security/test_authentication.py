"""Authentication with real clients: SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) over TLS
and plaintext, TLS client certificates, and clean failures."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import struct
import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.broker import rawproto
from tests.security.clients import (
    VALUES,
    confluent_auth_error,
    confluent_round_trip,
    create_topic,
    kafka_python_round_trip,
    kcat,
)
from tests.security.conftest import PLAIN_USERS, SecureBroker, closed_quietly

SCRAM_USERS = {"SCRAM-SHA-256": ("carol", "carol-secret"), "SCRAM-SHA-512": ("dave", "dave-secret")}


def sasl_ssl(secure: SecureBroker, mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": secure.address("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": str(secure.ca.cert),
    }


def credentials(mechanism: str) -> tuple[str, str]:
    if mechanism == "PLAIN":
        return "alice", PLAIN_USERS["alice"]
    return SCRAM_USERS[mechanism]


@pytest.fixture(scope="module")
def scram_users(secure: SecureBroker) -> dict[str, tuple[str, str]]:
    """SCRAM users made with AlterUserScramCredentials, by the PLAIN admin over SASL_SSL."""
    admin = AdminClient(sasl_ssl(secure, "PLAIN", "admin", PLAIN_USERS["admin"]))
    upserts = [
        UserScramCredentialUpsertion(
            user,
            ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), 4096),
            password.encode(),
        )
        for mechanism, (user, password) in SCRAM_USERS.items()
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=20)
    return SCRAM_USERS


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl(
    secure: SecureBroker, scram_users: object, mechanism: str
) -> None:
    conf = sasl_ssl(secure, mechanism, *credentials(mechanism))
    topic = f"ck-{mechanism.lower()}"
    create_topic(conf, topic)
    assert confluent_round_trip(conf, topic) == VALUES


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_over_sasl_ssl_and_sasl_plaintext(
    secure: SecureBroker, scram_users: object, mechanism: str
) -> None:
    user, password = credentials(mechanism)
    common = {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }
    for protocol in ["SASL_SSL", "SASL_PLAINTEXT"]:
        kwargs: dict[str, object] = {
            "bootstrap_servers": secure.address(protocol),
            "security_protocol": protocol,
            **common,
        }
        if protocol == "SASL_SSL":
            kwargs["ssl_cafile"] = str(secure.ca.cert)
        topic = f"kp-{mechanism.lower()}-{protocol.lower()}"
        assert kafka_python_round_trip(kwargs, topic) == VALUES


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kcat_over_sasl_ssl(secure: SecureBroker, scram_users: object, mechanism: str) -> None:
    user, password = credentials(mechanism)
    topic = f"kcat-{mechanism.lower()}"
    common = [
        "-b",
        secure.address("SASL_SSL"),
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        f"sasl.mechanisms={mechanism}",
        "-X",
        f"sasl.username={user}",
        "-X",
        f"sasl.password={password}",
        "-X",
        f"ssl.ca.location={secure.ca.cert}",
        "-t",
        topic,
    ]
    done = kcat([*common, "-P"], stdin="\n".join(VALUES) + "\n")
    assert done.returncode == 0, done.stderr
    done = kcat([*common, "-C", "-o", "beginning", "-e", "-q"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == VALUES


def test_mutual_tls(secure: SecureBroker) -> None:
    conf = {
        "bootstrap.servers": secure.address("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(secure.ca.cert),
        "ssl.certificate.location": str(secure.client.cert),
        "ssl.key.location": str(secure.client.key),
    }
    create_topic(conf, "mtls")
    assert confluent_round_trip(conf, "mtls") == VALUES


def test_missing_or_untrusted_client_certificate_fails(
    secure: SecureBroker, capfd: pytest.CaptureFixture[str]
) -> None:
    base = {
        "bootstrap.servers": secure.address("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(secure.ca.cert),
    }
    err = confluent_auth_error(base)
    assert "certificate required" in err.str(), err
    stranger = {
        **base,
        "ssl.certificate.location": str(secure.stranger.cert),
        "ssl.key.location": str(secure.stranger.key),
    }
    err = confluent_auth_error(stranger)
    assert "unknown ca" in err.str() or "certificate" in err.str(), err
    logged = capfd.readouterr().err
    assert "SSL handshake failed" in logged, logged[-2000:]


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("PLAIN", "alice", "wrong"),
        ("PLAIN", "nobody", "x"),
        ("SCRAM-SHA-256", "carol", "wrong"),
        ("SCRAM-SHA-512", "nobody", "x"),
    ],
)
def test_wrong_password_or_unknown_user_fails_cleanly(
    secure: SecureBroker,
    scram_users: object,
    capfd: pytest.CaptureFixture[str],
    mechanism: str,
    user: str,
    password: str,
) -> None:
    err = confluent_auth_error(sasl_ssl(secure, mechanism, user, password))
    assert err.code() == KafkaError._AUTHENTICATION, err
    assert "Authentication failed" in err.str(), err.str()
    # The broker logs from its own threads: the line may land a moment after the answer.
    expected = "Failed authentication with /127.0.0.1 (listener SASL_SSL): Authentication failed"
    logged = capfd.readouterr().err
    deadline = time.monotonic() + 5
    while expected not in logged and time.monotonic() < deadline:
        time.sleep(0.1)
        logged += capfd.readouterr().err
    assert expected in logged, logged


def test_scram_credentials_are_described_and_deleted(
    secure: SecureBroker, scram_users: object
) -> None:
    admin = AdminClient(sasl_ssl(secure, "PLAIN", "admin", PLAIN_USERS["admin"]))
    described = admin.describe_user_scram_credentials(["carol", "dave"])
    carol = described["carol"].result(timeout=20).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in carol] == [(ScramMechanism.SCRAM_SHA_256, 4096)]
    upsert = UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"erin-secret"
    )
    admin.alter_user_scram_credentials([upsert])["erin"].result(timeout=20)
    conf = sasl_ssl(secure, "SCRAM-SHA-256", "erin", "erin-secret")
    create_topic(conf, "erin")
    deletion = UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])["erin"].result(timeout=20)
    assert confluent_auth_error(conf).code() == KafkaError._AUTHENTICATION
    # Deleting again: the credential does not exist.
    with pytest.raises(Exception, match="does not exist"):
        admin.alter_user_scram_credentials([deletion])["erin"].result(timeout=20)
    too_few = UserScramCredentialUpsertion(
        "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 100), b"pw"
    )
    with pytest.raises(Exception, match="iterations"):
        admin.alter_user_scram_credentials([too_few])["frank"].result(timeout=20)
    stored = (secure.broker.log_dirs[0] / "scram-credentials.json").read_text()
    assert "carol-secret" not in stored and "stored_key=" in stored


def api_versions_request(correlation_id: int = 1) -> bytes:
    return rawproto.frame(rawproto.header(18, 0, correlation_id))


def metadata_request(correlation_id: int = 2) -> bytes:
    # Metadata v1, all topics (null array).
    return rawproto.frame(rawproto.header(3, 1, correlation_id) + struct.pack(">i", -1))


def test_only_api_versions_and_sasl_before_authentication(secure: SecureBroker) -> None:
    sock = rawproto.connect(secure.address("SASL_PLAINTEXT"))
    sock.sendall(api_versions_request())
    answer = rawproto.read_frame(sock)
    assert struct.unpack(">i", answer[:4])[0] == 1
    sock.sendall(metadata_request())
    assert rawproto.closed_by_peer(sock)
    # A frame past sasl.server.max.receive.size (512 KiB) before authentication: closed
    # once its size is read, nothing buffered (CVE-2022-34917).
    sock = rawproto.connect(secure.address("SASL_PLAINTEXT"))
    sock.sendall(struct.pack(">i", 512 * 1024 + 1) + rawproto.header(17, 1, 3))
    assert rawproto.closed_by_peer(sock)


def test_tls_mismatches_close_cleanly(secure: SecureBroker) -> None:
    # A plaintext Kafka client on a TLS port.
    sock = rawproto.connect(secure.address("SASL_SSL"))
    sock.sendall(api_versions_request())
    assert closed_quietly(sock)
    # Garbage on a TLS port.
    sock = rawproto.connect(secure.address("SSL"))
    sock.sendall(b"\x16\x03\x01\x00\x05garbagegarbage" * 10)
    assert closed_quietly(sock)
    # A TLS client on a plaintext port.
    raw = socket.create_connection(("127.0.0.1", secure.port("PLAINTEXT")), timeout=5)
    context = ssl.create_default_context(cafile=str(secure.ca.cert))
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        context.wrap_socket(raw, server_hostname="localhost")
    raw.close()
    # The broker still serves.
    sock = rawproto.connect(secure.address("PLAINTEXT"))
    sock.sendall(api_versions_request(7))
    assert struct.unpack(">i", rawproto.read_frame(sock)[:4])[0] == 7
    sock.close()


def jwt(claims: dict[str, object], key: rsa.RSAPrivateKey | None = None) -> str:
    """An unsigned JWT, or one signed RS256 with `key`."""

    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    if key is None:
        return f"{part({'alg': 'none'})}.{part(claims)}."
    signed = f"{part({'alg': 'RS256', 'kid': 'k1'})}.{part(claims)}"
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def test_oauthbearer_unsecured_and_jwks(
    secure: SecureBroker, capfd: pytest.CaptureFixture[str]
) -> None:
    # SASL_SSL validates unsecured JWTs (Kafka's default); librdkafka makes one itself.
    conf = {
        "bootstrap.servers": secure.address("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(secure.ca.cert),
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=alice",
    }
    create_topic(conf, "oauth")
    assert confluent_round_trip(conf, "oauth") == VALUES
    # SASL_PLAINTEXT checks signed JWTs against a JWKS file (audience "kafkalite"); the
    # client hands over our tokens through oauth_cb.
    now = int(time.time())

    def with_token(token: str) -> dict[str, object]:
        return {
            "bootstrap.servers": secure.address("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": lambda _config: (token, time.time() + 3600, "ignored"),
        }

    claims = {"sub": "bob", "aud": "kafkalite", "iat": now, "exp": now + 60}
    assert confluent_round_trip(with_token(jwt(claims, secure.jwt_key)), "oauth") == VALUES
    refused = {
        "the token has expired": jwt({**claims, "iat": now - 120, "exp": now - 60}, secure.jwt_key),
        "algorithm": jwt(claims),
        "unexpected audience": jwt({**claims, "aud": "other"}, secure.jwt_key),
        "does not verify": jwt(
            claims, rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ),
    }
    for why, token in refused.items():
        assert confluent_auth_error(with_token(token)).code() == KafkaError._AUTHENTICATION
        assert why in capfd.readouterr().err, why
