"""OAUTHBEARER against a JWKS served over https (a loopback server with a certificate of
the test CA): tokens signed with its key pass; after the issuer rotates to a new key, a
token naming the new key id makes the broker fetch the set again, and the client's next
try passes. An https URL nobody answers stops the broker, naming the key."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kafkalite import Broker
from tests.security.certs import Pem
from tests.security.clients import VALUES, confluent_auth_error, confluent_round_trip

HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwk(kid: str, key: rsa.RSAPrivateKey) -> dict[str, str]:
    n = key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "kid": kid,
        "alg": "RS256",
        "n": b64(n.n.to_bytes((n.n.bit_length() + 7) // 8, "big")),
        "e": b64(n.e.to_bytes((n.e.bit_length() + 7) // 8, "big")),
    }


def token(kid: str, key: rsa.RSAPrivateKey, sub: str = "jwks-user") -> str:
    now = int(time.time())
    header = b64(json.dumps({"alg": "RS256", "kid": kid}).encode())
    claims = b64(json.dumps({"sub": sub, "iat": now, "exp": now + 600}).encode())
    signed = f"{header}.{claims}"
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{b64(signature)}"


class Issuer:
    """A JWKS document served over https on loopback; `keys` may change at any time."""

    def __init__(self, server_pem: Pem) -> None:
        self.keys: list[dict[str, str]] = []
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                body = json.dumps({"keys": issuer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(server_pem.cert), str(server_pem.key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/jwks.json"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def issuer(pki: tuple[Path, Pem, Pem, Pem, Pem]) -> Iterator[Issuer]:
    _directory, _ca, server, _client, _stranger = pki
    i = Issuer(server)
    yield i
    i.close()


def config(url: str, ca: Pem) -> dict[str, str]:
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
        "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": url,
        # Hourly, as Kafka's default: only a missing key id fetches sooner here.
        "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "200",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert),
    }


def client(broker: Broker, jwt: str) -> dict[str, object]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": lambda _config: (jwt, time.time() + 600, "ignored"),
    }


def test_jwks_over_https_with_key_rotation(
    issuer: Issuer,
    pki: tuple[Path, Pem, Pem, Pem, Pem],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    _directory, ca, _server, _client, _stranger = pki
    first = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    second = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer.keys = [jwk("k1", first)]
    with Broker(log_dirs=tmp_path, config=config(issuer.url, ca)) as broker:
        assert issuer.fetches == 1
        assert confluent_round_trip(client(broker, token("k1", first)), "jwks-https") == VALUES
        # The issuer rotates to a new key: the first token naming it is refused (the set
        # lacks it) and makes the broker fetch the set again; a retry passes.
        issuer.keys = [jwk("k2", second)]
        rotated = client(broker, token("k2", second))
        assert confluent_auth_error(rotated).code() == KafkaError._AUTHENTICATION
        deadline = time.monotonic() + 10
        while issuer.fetches < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert issuer.fetches >= 2
        assert confluent_round_trip(rotated, "jwks-https") == VALUES
        # The old key is gone from the set.
        assert confluent_auth_error(client(broker, token("k1", first))).code() == (
            KafkaError._AUTHENTICATION
        )
    assert "does not verify" in capfd.readouterr().err


def test_unreachable_https_jwks_stops_the_broker(
    pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path: Path
) -> None:
    _directory, ca, _server, _client, _stranger = pki
    with pytest.raises(Exception, match=r"sasl\.oauthbearer\.jwks\.endpoint\.url") as e:
        Broker(log_dirs=tmp_path, config=config("https://127.0.0.1:1/jwks", ca)).start()
    assert "127.0.0.1:1" in str(e.value), e.value


def jaas(**options: str) -> str:
    quoted = " ".join(f'{k}="{v}"' for k, v in options.items())
    return f"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {quoted};"


def test_the_jwks_truststore_is_read_from_the_jaas_options_as_kafka_reads_it(
    issuer: Issuer, pki: tuple[Path, Pem, Pem, Pem, Pem], tmp_path: Path
) -> None:
    """Kafka's JWKS client takes `ssl.*` from the OAUTHBEARER JAAS entry's options. With
    the CA there and no truststore key elsewhere the set is fetched; with a CA that did not
    sign the server there, the broker does not start, even though the listener's
    truststore would have trusted it: the JAAS options win, read from there alone."""
    _directory, ca, _server, _client, stranger = pki
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer.keys = [jwk("j1", key)]
    jaas_key = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"

    settings = config(issuer.url, ca)
    del settings["ssl.truststore.type"], settings["ssl.truststore.location"]
    settings[jaas_key] = jaas(
        **{"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.cert)}
    )
    with Broker(log_dirs=tmp_path / "a", config=settings) as broker:
        assert confluent_round_trip(client(broker, token("j1", key)), "jwks-jaas") == VALUES

    settings = config(issuer.url, ca)
    settings[jaas_key] = jaas(
        **{"ssl.truststore.type": "PEM", "ssl.truststore.location": str(stranger.cert)}
    )
    with pytest.raises(Exception, match=r"sasl\.oauthbearer\.jwks\.endpoint\.url"):
        Broker(log_dirs=tmp_path / "b", config=settings).start()

    # The type defaults to Kafka's JKS when only the location is given; the error names
    # where the key came from.
    settings[jaas_key] = jaas(**{"ssl.truststore.location": str(ca.cert)})
    with pytest.raises(
        Exception, match=r"JKS.*OAUTHBEARER sasl\.jaas\.config|OAUTHBEARER sasl\.jaas\.config.*JKS"
    ):
        Broker(log_dirs=tmp_path / "c", config=settings).start()
