"""KIP-306's `connection.failed.authentication.delay.ms`: a failed SASL authentication (a
wrong password, a mechanism the listener does not offer) is answered, and its connection
closed, only after the delay, as Kafka's delayed close does; a good one is answered at
once. librdkafka sees its authentication error no sooner."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer

from kafkalite import Broker
from tests.broker import rawproto
from tests.security.conftest import plain_jaas
from tests.security.test_reauth import authenticate, handshake

USERS = {"alice": "alice-secret"}
DELAY_MS = 1500
SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
    }
    with Broker(log_dirs=tmp_path_factory.mktemp("auth-delay"), config=config) as b:
        yield b


def address(broker: Broker) -> str:
    return next(f"{h}:{p}" for n, h, p in broker.addresses if n == "SASL_PLAINTEXT")


def timed(call):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started


def test_a_wrong_password_is_answered_after_the_delay_then_closed(broker: Broker) -> None:
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    (code, _), took = timed(lambda: authenticate(sock, b"\0alice\0wrong", 2))
    assert code == SASL_AUTHENTICATION_FAILED
    assert took >= DELAY_MS / 1000 * 0.95, took
    assert rawproto.closed_by_peer(sock, timeout=2.0)
    # The right password is answered at once.
    sock = rawproto.connect(address(broker))
    assert handshake(sock, "PLAIN", 1) == 0
    (code, _), took = timed(lambda: authenticate(sock, b"\0alice\0alice-secret", 2))
    assert code == 0 and took < DELAY_MS / 1000 / 2, took
    sock.close()


def test_an_unsupported_mechanism_is_answered_after_the_delay_then_closed(broker: Broker) -> None:
    sock = rawproto.connect(address(broker))
    code, took = timed(lambda: handshake(sock, "SCRAM-SHA-512", 1))
    assert code == UNSUPPORTED_SASL_MECHANISM
    assert took >= DELAY_MS / 1000 * 0.95, took
    assert rawproto.closed_by_peer(sock, timeout=2.0)


def test_librdkafka_learns_of_its_failed_login_no_sooner_than_the_delay(broker: Broker) -> None:
    failed = threading.Event()

    def on_error(e: KafkaError) -> None:
        if e.code() == KafkaError._AUTHENTICATION:
            failed.set()

    started = time.monotonic()
    producer = Producer(
        {
            "bootstrap.servers": address(broker),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "wrong",
            "error_cb": on_error,
        }
    )
    try:
        while not failed.is_set() and time.monotonic() - started < 10:
            producer.poll(0.1)
        assert failed.is_set(), "no authentication error within 10 s"
        assert time.monotonic() - started >= DELAY_MS / 1000 * 0.95
    finally:
        producer.flush(0)
