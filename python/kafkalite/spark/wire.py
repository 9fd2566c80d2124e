"""A minimal Kafka protocol client for the Spark source: Metadata v4, ListOffsets v1 and
Fetch v5, hand-encoded. One request per call and no per-record work: a Fetch hands back the
partition's records section as a memoryview for the Rust decoder."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from kafkalite.errors import KafkaliteError

METADATA, LIST_OFFSETS, FETCH = 3, 2, 1
EARLIEST, LATEST = -2, -1
#: Kafka error codes the source handles by name.
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 3
CLIENT_ID = b"kafkalite-spark"
#: A response larger than this is a broken peer, not data: never allocate it.
FRAME_BYTES_MAX = 512 << 20


class BrokerError(KafkaliteError):
    """The broker answered a request with a Kafka error code."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class PartitionMeta:
    topic: str
    partition: int
    leader: int


@dataclass
class Metadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: topic -> its partitions' metadata, only topics without an error.
    topics: dict[str, list[PartitionMeta]] = field(default_factory=dict)
    #: topic -> error code for topics the broker could not describe.
    errors: dict[str, int] = field(default_factory=dict)
    internal: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class FetchedPartition:
    error_code: int
    high_watermark: int
    log_start_offset: int
    #: The records section (complete batches, possibly a trailing partial one).
    records: memoryview


class _Reader:
    """A cursor over a response body; every read is bounds-checked by struct."""

    def __init__(self, data: bytes | bytearray) -> None:
        self.view = memoryview(data)
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.view, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def i8(self) -> int:
        return self.take(">b")[0]

    def i16(self) -> int:
        return self.take(">h")[0]

    def i32(self) -> int:
        return self.take(">i")[0]

    def i64(self) -> int:
        return self.take(">q")[0]

    def string(self) -> str | None:
        size = self.i16()
        if size < 0:
            return None
        text = bytes(self.view[self.pos : self.pos + size]).decode()
        self.pos += size
        return text

    def nullable_bytes(self) -> memoryview:
        size = self.i32()
        if size < 0:
            return memoryview(b"")
        if self.pos + size > len(self.view):
            raise BrokerError("truncated records in a fetch response", -1)
        out = self.view[self.pos : self.pos + size]
        self.pos += size
        return out


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    out = []
    for item in servers.split(","):
        item = item.strip()
        if not item:
            continue
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(
                f"kafka.bootstrap.servers: {item!r} is not host:port (got {servers!r})"
            )
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("kafka.bootstrap.servers: no host:port given")
    return out


class Connection:
    """One socket to one broker; requests are sent one at a time."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def request(self, api_key: int, version: int, body: bytes) -> _Reader:
        self.correlation_id += 1
        header = struct.pack(">hhih", api_key, version, self.correlation_id, len(CLIENT_ID))
        payload = header + CLIENT_ID + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._recv_exact(4))
        if not 4 <= size <= FRAME_BYTES_MAX:
            raise BrokerError(f"response frame of {size} bytes", -1)
        reader = _Reader(self._recv_exact(size))
        if reader.i32() != self.correlation_id:
            raise BrokerError("response correlation id does not match the request", -1)
        return reader

    def _recv_exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            chunk = self.sock.recv_into(view[got:], n - got)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            got += chunk
        return buf


class Client:
    """Metadata, ListOffsets and Fetch against a cluster, routed to partition leaders."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap = _parse_bootstrap(bootstrap_servers)
        self.bootstrap_servers = bootstrap_servers
        self._conns: dict[tuple[str, int], Connection] = {}
        self._meta: Metadata | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _conn(self, address: tuple[str, int]) -> Connection:
        conn = self._conns.get(address)
        if conn is None:
            conn = self._conns[address] = Connection(*address)
        return conn

    def _any_conn(self) -> Connection:
        errors = []
        for address in self.bootstrap:
            try:
                return self._conn(address)
            except OSError as exc:
                errors.append(f"{address[0]}:{address[1]}: {exc}")
        raise ConnectionError(
            f"kafka.bootstrap.servers: no broker reachable at {self.bootstrap_servers} "
            f"({'; '.join(errors)})"
        )

    def _leader_conn(self, topic: str, partition: int) -> Connection:
        meta = self._meta or self.metadata([topic])
        leader = next(
            (p.leader for p in meta.topics.get(topic, []) if p.partition == partition), None
        )
        if leader is None and self._meta is not None:
            meta = self.metadata([topic])
            leader = next(
                (p.leader for p in meta.topics.get(topic, []) if p.partition == partition), None
            )
        if leader is None or leader not in meta.brokers:
            return self._any_conn()
        return self._conn(meta.brokers[leader])

    def metadata(self, topics: list[str] | None) -> Metadata:
        """Describe `topics` (None: every topic) without creating any."""
        if topics is None:
            body = struct.pack(">i", -1)
        else:
            body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
        body += struct.pack(">?", False)  # allow_auto_topic_creation
        r = self._any_conn().request(METADATA, 4, body)
        meta = Metadata()
        r.i32()  # throttle_time_ms
        for _ in range(r.i32()):
            node_id, host, port = r.i32(), r.string(), r.i32()
            r.string()  # rack
            meta.brokers[node_id] = (host or "", port)
        r.string()  # cluster_id
        r.i32()  # controller_id
        for _ in range(r.i32()):
            error, name, internal = r.i16(), r.string() or "", r.i8()
            partitions = []
            for _ in range(r.i32()):
                _perr, index, leader = r.i16(), r.i32(), r.i32()
                r.take(f">{r.i32()}i")  # replicas
                r.take(f">{r.i32()}i")  # isr
                partitions.append(PartitionMeta(name, index, leader))
            if error != NONE:
                meta.errors[name] = error
                continue
            meta.topics[name] = sorted(partitions, key=lambda p: p.partition)
            if internal:
                meta.internal.add(name)
        self._meta = meta
        return meta

    def list_offsets(self, requests: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """For each (topic, partition) -> timestamp (or EARLIEST/LATEST), the offset the
        broker answers; -1 when no record has a timestamp at or after the one asked."""
        by_conn: dict[int, tuple[Connection, dict[tuple[str, int], int]]] = {}
        for tp, ts in requests.items():
            conn = self._leader_conn(*tp)
            by_conn.setdefault(id(conn), (conn, {}))[1][tp] = ts
        out: dict[tuple[str, int], int] = {}
        for conn, wanted in by_conn.values():
            by_topic: dict[str, list[tuple[int, int]]] = {}
            for (topic, partition), ts in wanted.items():
                by_topic.setdefault(topic, []).append((partition, ts))
            body = struct.pack(">ii", -1, len(by_topic))
            for topic, parts in by_topic.items():
                body += _string(topic) + struct.pack(">i", len(parts))
                body += b"".join(struct.pack(">iq", p, ts) for p, ts in parts)
            r = conn.request(LIST_OFFSETS, 1, body)
            for _ in range(r.i32()):
                topic = r.string() or ""
                for _ in range(r.i32()):
                    partition, error, _ts, offset = r.i32(), r.i16(), r.i64(), r.i64()
                    if error != NONE:
                        raise BrokerError(
                            f"ListOffsets for {topic}-{partition} failed with error {error}",
                            error,
                        )
                    out[(topic, partition)] = offset
        return out

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        max_wait_ms: int = 0,
    ) -> FetchedPartition:
        """One Fetch v5 (read_uncommitted) of one partition from `offset`."""
        body = struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, 0)
        body += struct.pack(">i", 1) + _string(topic)
        body += struct.pack(">iiqqi", 1, partition, offset, -1, max_bytes)
        r = self._leader_conn(topic, partition).request(FETCH, 5, body)
        r.i32()  # throttle_time_ms
        for _ in range(r.i32()):
            name = r.string()
            for _ in range(r.i32()):
                index, error, high_watermark = r.i32(), r.i16(), r.i64()
                r.i64()  # last_stable_offset
                log_start = r.i64()
                aborted = r.i32()
                if aborted > 0:
                    r.take(f">{2 * aborted}q")
                records = r.nullable_bytes()
                if name == topic and index == partition:
                    return FetchedPartition(error, high_watermark, log_start, records)
        raise BrokerError(f"fetch response has no data for {topic}-{partition}", -1)
