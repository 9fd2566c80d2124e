"""One broker with every security protocol at once (PLAINTEXT, SSL with client
certificates required, SASL_PLAINTEXT, SASL_SSL), certificates made for the session, and
the helpers the tests share."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kafkalite import Broker
from tests.security.certs import Authority, Pem

PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}


def plain_jaas(users: dict[str, str]) -> str:
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="admin-secret" {options};'
    )


@dataclass
class SecureBroker:
    broker: Broker
    ca: Pem
    client: Pem
    stranger: Pem
    directory: Path
    # Signs the JWTs the SASL_PLAINTEXT listener's OAUTHBEARER checks against its JWKS.
    jwt_key: rsa.RSAPrivateKey

    def address(self, listener: str) -> str:
        for name, host, port in self.broker.addresses:
            if name == listener:
                return f"{host}:{port}"
        raise KeyError(listener)

    def port(self, listener: str) -> int:
        return int(self.address(listener).rsplit(":", 1)[1])


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Pem, Pem, Pem, Pem]:
    directory = tmp_path_factory.mktemp("pki")
    ca = Authority(directory, "ca")
    server = ca.issue("server", "localhost", server=True)
    client = ca.issue("client", "alice-client", server=False, ou="ServiceUsers")
    stranger = Authority(directory, "stranger").issue("stranger", "mallory", server=False)
    return directory, ca.pem, server, client, stranger


@pytest.fixture(scope="module")
def secure(
    pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureBroker]:
    directory, ca, server, client, stranger = pki
    jwt_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = jwt_key.public_key().public_numbers()

    def b64(n: int) -> str:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    jwks = directory / "jwks.json"
    jwks.write_text(
        json.dumps(
            {
                "keys": [
                    {
                        "kty": "RSA",
                        "kid": "k1",
                        "alg": "RS256",
                        "n": b64(numbers.n),
                        "e": b64(numbers.e),
                    }
                ]
            }
        )
    )
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
        "SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.bundle),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(PLAIN_USERS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(PLAIN_USERS),
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
        ),
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": f"file://{jwks}",
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.expected.audience": "kafkalite",
        "num.partitions": 1,
    }
    with Broker(log_dirs=tmp_path_factory.mktemp("data"), config=config) as broker:
        yield SecureBroker(broker, ca, client, stranger, directory, jwt_key)


def closed_quietly(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the broker closes `sock` (EOF or reset) without sending a Kafka answer."""
    sock.settimeout(timeout)
    try:
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
            data += chunk
            # A TLS alert record is a clean refusal too; anything else is an answer.
            if not data.startswith(b"\x15\x03"):
                return False
    except ConnectionResetError:
        return True
    finally:
        sock.close()
