"""Hand-built Kafka frames for the malformed-input tests (test_hostile_input.py): bytes no
well-formed client would send. Well-formed requests go through `_core.KafkaClient`, or,
to read an answer field by field as the broker wrote it, through `exchange`."""

from __future__ import annotations

import socket
import struct
from typing import Any


def header(api_key: int, version: int, correlation_id: int, client_id: str = "rawtest") -> bytes:
    cid = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid


def header_v2(api_key: int, version: int, correlation_id: int) -> bytes:
    """Request header v2 (flexible versions): v1 plus an empty tagged-field section."""
    return header(api_key, version, correlation_id) + b"\x00"


def uvarint(n: int) -> bytes:
    """Unsigned varint as the flexible versions encode compact lengths (length + 1)."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if not n:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def read_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by broker")
        buf.extend(chunk)
    return bytes(buf)


def closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True when the broker closes the connection (rather than answering)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def exchange(bootstrap: str, request: Any, response_class: Any, version: int) -> Any:
    """One request of kafka-python's protocol classes (``kafka.protocol``) on a connection
    of its own, its answer decoded at the same version."""
    request.with_header(correlation_id=1, client_id="rawproto")
    sock = connect(bootstrap)
    try:
        sock.sendall(request.encode(version=version, header=True, framed=True))
        return response_class.decode(read_frame(sock), version=version, header=True)
    finally:
        sock.close()
