"""Hand-built Kafka requests for tests that need exact bytes on the wire."""

from __future__ import annotations

import socket
import struct

from kafkalite import _core


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


def init_producer_id(sock: socket.socket) -> tuple[int, int]:
    body = struct.pack(">hi", -1, 60000)  # null transactional id, timeout
    sock.sendall(frame(header(22, 1, 7) + body))
    resp = read_frame(sock)
    _corr, _throttle, error, pid, epoch = struct.unpack(">iihqh", resp[:20])
    assert error == 0, error
    return pid, epoch


def idempotent_batch(
    records: list[tuple[bytes | None, bytes]], pid: int, epoch: int, seq: int
) -> bytes:
    """A batch from build_batch with producer id, epoch and base sequence set, CRC fixed."""
    batch = bytearray(_core.build_batch(records))
    batch[43:51] = struct.pack(">q", pid)
    batch[51:53] = struct.pack(">h", epoch)
    batch[53:57] = struct.pack(">i", seq)
    batch[17:21] = struct.pack(">I", _core.crc32c(bytes(batch[21:])))
    return bytes(batch)


def produce_v3(
    sock: socket.socket, topic: str, partition: int, batch: bytes, corr: int
) -> tuple[int, int]:
    """Produce v3 with acks=-1; returns (error code, base offset)."""
    name = topic.encode()
    body = (
        struct.pack(">hhi", -1, -1, 10000)
        + struct.pack(">ih", 1, len(name))
        + name
        + struct.pack(">ii", 1, partition)
        + struct.pack(">i", len(batch))
        + batch
    )
    sock.sendall(frame(header(0, 3, corr) + body))
    resp = read_frame(sock)
    pos = 4 + 4  # correlation id, topic count
    (name_len,) = struct.unpack(">h", resp[pos : pos + 2])
    pos += 2 + name_len + 4  # name, partition count
    _index, error, base_offset = struct.unpack(">ihq", resp[pos : pos + 14])
    return error, base_offset
