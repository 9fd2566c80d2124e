"""Connection limits: past max.connections.per.ip the next connection is closed at once
(logged once per burst, the broker keeps serving); at max.connections the broker accepts
nothing more until a connection closes; connections.max.idle.ms closes idle ones."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

from kafkalite import Broker
from tests.quotas.conftest import kafka_configs


def api_versions(sock: socket.socket, correlation_id: int = 1) -> bytes:
    """Send ApiVersions v0 and read the answer (raises on a closed connection)."""
    body = struct.pack(">hhih", 18, 0, correlation_id, -1)
    sock.sendall(struct.pack(">i", len(body)) + body)
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        raise ConnectionError("closed")
    (n,) = struct.unpack(">i", size)
    return sock.recv(n, socket.MSG_WAITALL)


def connect(broker: Broker) -> socket.socket:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def closed_at_once(sock: socket.socket) -> bool:
    try:
        api_versions(sock)
    except (ConnectionError, OSError):
        return True
    return False


def test_per_ip_limit_refuses_the_next_connection(
    kafkalite_broker_factory: Callable[..., Broker],
) -> None:
    broker = kafkalite_broker_factory(config={"max.connections.per.ip": "3"})
    held = [connect(broker) for _ in range(3)]
    for s in held:
        assert api_versions(s)
    refused = [connect(broker) for _ in range(5)]
    assert all(closed_at_once(s) for s in refused)
    held.pop().close()
    time.sleep(0.2)
    again = connect(broker)
    assert api_versions(again), "a slot came back"
    for s in [*held, again, *refused]:
        s.close()


def test_overrides_and_listener_limit(kafkalite_broker_factory: Callable[..., Broker]) -> None:
    broker = kafkalite_broker_factory(
        config={"max.connections.per.ip.overrides": "127.0.0.1:1"},
    )
    first = connect(broker)
    assert api_versions(first)
    assert closed_at_once(connect(broker))
    first.close()


def test_connection_limits_change_without_a_restart(
    kafkalite_broker_factory: Callable[..., Broker],
) -> None:
    broker = kafkalite_broker_factory()
    default = ("--entity-type", "brokers", "--entity-default", "--alter")
    kafka_configs(broker.bootstrap_servers, *default, "--add-config", "max.connections.per.ip=2")
    held = [connect(broker) for _ in range(2)]
    for s in held:
        assert api_versions(s)
    extra = connect(broker)
    assert closed_at_once(extra), "the new limit holds at once"
    for s in [*held, extra]:
        s.close()
    time.sleep(0.2)
    kafka_configs(broker.bootstrap_servers, *default, "--delete-config", "max.connections.per.ip")
    five = [connect(broker) for _ in range(5)]
    for s in five:
        assert api_versions(s), "the limit is gone"
        s.close()


def test_max_connections_holds_the_next_until_one_closes(
    kafkalite_broker_factory: Callable[..., Broker],
) -> None:
    broker = kafkalite_broker_factory(config={"max.connections": "2"})
    held = [connect(broker) for _ in range(2)]
    for s in held:
        assert api_versions(s)
    waiting = connect(broker)
    waiting.settimeout(1.5)
    try:
        api_versions(waiting)
        raise AssertionError("the third connection was served past max.connections=2")
    except TimeoutError:
        pass
    held.pop().close()
    waiting.settimeout(5)
    # The request sent while waiting in the backlog is answered once a slot frees.
    size = waiting.recv(4, socket.MSG_WAITALL)
    assert len(size) == 4
    for s in [*held, waiting]:
        s.close()


def test_idle_connections_are_closed(kafkalite_broker_factory: Callable[..., Broker]) -> None:
    broker = kafkalite_broker_factory(config={"connections.max.idle.ms": "500"})
    idle = connect(broker)
    assert api_versions(idle)
    time.sleep(1.5)
    assert closed_at_once(idle)


def test_ip_connection_creation_rate(kafkalite_broker_factory: Callable[..., Broker]) -> None:
    broker = kafkalite_broker_factory()
    kafka_configs(
        broker.bootstrap_servers,
        "--alter",
        "--entity-type",
        "ips",
        "--entity-name",
        "127.0.0.1",
        "--add-config",
        "connection_creation_rate=2",
    )
    out = kafka_configs(
        broker.bootstrap_servers, "--describe", "--entity-type", "ips", "--entity-name", "127.0.0.1"
    )
    assert "connection_creation_rate=2" in out, out
    socks = [connect(broker) for _ in range(40)]
    refused = sum(closed_at_once(s) for s in socks)
    # About 20 (two per second over ten windows) get in at once; the rest are refused.
    assert 10 <= refused <= 30, refused
    for s in socks:
        s.close()
