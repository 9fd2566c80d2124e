"""aiokafka, the asyncio client, over SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
OAUTHBEARER, over SASL_PLAINTEXT with a JWKS-checked token, and over mutual TLS; a wrong
password is an authentication error, not a hang."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaError
from aiokafka.helpers import create_ssl_context

from tests.security.clients import VALUES
from tests.security.conftest import SecureBroker
from tests.security.test_authentication import credentials, jwt
from tests.security.test_authentication import scram_users as scram_users


class Token(AbstractTokenProvider):
    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self) -> str:
        return self._token


async def round_trip(kwargs: dict[str, Any], topic: str) -> list[str]:
    producer = AIOKafkaProducer(acks="all", **kwargs)
    await producer.start()
    try:
        for v in VALUES:
            await producer.send_and_wait(topic, v.encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **kwargs)
    await consumer.start()
    got: list[str] = []
    try:
        while len(got) < len(VALUES):
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
            got += [m.value.decode() for msgs in batch.values() for m in msgs]
    finally:
        await consumer.stop()
    return got


def sasl_ssl(secure: SecureBroker, mechanism: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": secure.address("SASL_SSL"),
        "security_protocol": "SASL_SSL",
        "ssl_context": create_ssl_context(cafile=str(secure.ca.cert)),
        "sasl_mechanism": mechanism,
        **extra,
    }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_over_sasl_ssl(secure: SecureBroker, scram_users: object, mechanism: str) -> None:
    user, password = credentials(mechanism)
    kwargs = sasl_ssl(secure, mechanism, sasl_plain_username=user, sasl_plain_password=password)
    topic = f"aio-{mechanism.lower()}"
    assert asyncio.run(round_trip(kwargs, topic)) == VALUES


def test_aiokafka_oauthbearer(secure: SecureBroker) -> None:
    now = int(time.time())
    # SASL_SSL takes Kafka's unsecured development tokens.
    unsecured = jwt({"sub": "alice", "iat": now, "exp": now + 600})
    kwargs = sasl_ssl(secure, "OAUTHBEARER", sasl_oauth_token_provider=Token(unsecured))
    assert asyncio.run(round_trip(kwargs, "aio-oauth")) == VALUES
    # SASL_PLAINTEXT checks the signature against its JWKS file.
    claims = {"sub": "bob", "aud": "kafkalite", "iat": now, "exp": now + 600}
    signed = {
        "bootstrap_servers": secure.address("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": Token(jwt(claims, secure.jwt_key)),
    }
    assert asyncio.run(round_trip(signed, "aio-oauth-jwks")) == VALUES


def test_aiokafka_mutual_tls(secure: SecureBroker) -> None:
    context = create_ssl_context(
        cafile=str(secure.ca.cert),
        certfile=str(secure.client.cert),
        keyfile=str(secure.client.key),
    )
    kwargs = {
        "bootstrap_servers": secure.address("SSL"),
        "security_protocol": "SSL",
        "ssl_context": context,
    }
    assert asyncio.run(round_trip(kwargs, "aio-mtls")) == VALUES


def test_aiokafka_wrong_password_is_an_authentication_error(
    secure: SecureBroker, scram_users: object, caplog: pytest.LogCaptureFixture
) -> None:
    kwargs = sasl_ssl(
        secure, "SCRAM-SHA-256", sasl_plain_username="carol", sasl_plain_password="wrong"
    )

    async def start() -> None:
        producer = AIOKafkaProducer(**kwargs)
        try:
            await asyncio.wait_for(producer.start(), 30)
        finally:
            await producer.stop()

    # aiokafka reports the broker's SASL_AUTHENTICATION_FAILED (58) in its log and gives
    # up bootstrapping: a prompt failure, not a hang.
    with pytest.raises(KafkaError):
        asyncio.run(start())
    assert "SaslAuthenticationFailed: Authentication failed" in caplog.text, caplog.text
