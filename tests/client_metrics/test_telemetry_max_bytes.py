"""`telemetry.max.bytes` (KIP-714): GetTelemetrySubscriptions tells each client the
broker's limit, and a PushTelemetry whose metrics are larger is refused
TELEMETRY_TOO_LARGE while one within it is taken. The requests are KIP-714's v0, built by
hand over a plain socket, so each answer is read as the broker wrote it."""

from __future__ import annotations

import socket
import struct
import uuid

from kafkalite import Broker, _core
from tests.broker import rawproto

GET_SUBSCRIPTIONS, PUSH = 71, 72
TELEMETRY_TOO_LARGE = _core.error_code("TELEMETRY_TOO_LARGE")


def get_subscriptions(sock: socket.socket) -> tuple[uuid.UUID, int, int]:
    """(client instance id, subscription id, telemetry max bytes) for a new instance."""
    sock.sendall(rawproto.frame(rawproto.header_v2(GET_SUBSCRIPTIONS, 0, 1) + bytes(16) + b"\0"))
    answer = rawproto.read_frame(sock)
    body = answer[5:]  # correlation id, header tags
    _throttle, code = struct.unpack(">ih", body[:6])
    assert code == 0, code
    instance = uuid.UUID(bytes=body[6:22])
    (subscription,) = struct.unpack(">i", body[22:26])
    compressions = body[26] - 1  # compact array of int8
    pos = 27 + compressions + 4  # then push_interval_ms
    (max_bytes,) = struct.unpack(">i", body[pos : pos + 4])
    return instance, subscription, max_bytes


def push(sock: socket.socket, instance: uuid.UUID, subscription: int, metrics: bytes) -> int:
    body = (
        instance.bytes
        + struct.pack(">i?b", subscription, False, 0)
        + rawproto.uvarint(len(metrics) + 1)
        + metrics
        + b"\0"
    )
    sock.sendall(rawproto.frame(rawproto.header_v2(PUSH, 0, 2) + body))
    answer = rawproto.read_frame(sock)
    _throttle, code = struct.unpack(">ih", answer[5:11])
    return int(code)


def test_pushes_are_bounded_by_the_brokers_telemetry_max_bytes() -> None:
    with Broker(config={"telemetry.max.bytes": 512}) as small, Broker() as default:
        for broker, limit in ((small, 512), (default, 1 << 20)):
            sock = rawproto.connect(broker.bootstrap_servers)
            try:
                instance, subscription, max_bytes = get_subscriptions(sock)
                assert max_bytes == limit
                # OTLP metrics with nothing but an unknown field of 1,000 bytes (skipped
                # by a reader): past the small limit, within the default one.
                metrics = b"\x7a" + rawproto.uvarint(1000) + b"\0" * 1000
                code = push(sock, instance, subscription, metrics)
                assert code == (TELEMETRY_TOO_LARGE if limit == 512 else 0), code
            finally:
                sock.close()
