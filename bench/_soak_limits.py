"""The soak's limit probes (bench/soak.py), each ``probe(node, args) -> dict``: what the
broker's RSS and fds did, whether it still answered a produce meanwhile (and how fast),
and what happened to the abusive connections.

The requests of the never-reading clients are encoded by kafka-python's protocol classes
(a real client's encoder), since no client library lets its caller skip reading."""

from __future__ import annotations

import argparse
import resource
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.parser import KafkaProtocol

from kafkalite.chaos.node import Node

MIB = 1 << 20


class Peak(threading.Thread):
    """The broker's highest RSS and fd count while a probe runs (sampled every 0.2 s)."""

    def __init__(self, node: Node) -> None:
        super().__init__(daemon=True)
        self.node = node
        self.before = node.usage()
        self.rss = self.before["rss_bytes"]
        self.fds = self.before["fds"]
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._halt.wait(0.2):
            u = self.node.usage()
            self.rss, self.fds = max(self.rss, u["rss_bytes"]), max(self.fds, u["fds"])

    def done(self) -> dict[str, Any]:
        self._halt.set()
        self.join()
        after = self.node.usage()
        return {
            "rss_mb_before": round(self.before["rss_bytes"] / MIB, 1),
            "rss_mb_peak": round(self.rss / MIB, 1),
            "rss_mb_after": round(after["rss_bytes"] / MIB, 1),
            "fds_before": self.before["fds"],
            "fds_peak": self.fds,
            "fds_after": after["fds"],
        }


def produce_ms(bootstrap: str) -> float | None:
    """One acks=all produce on a new client, connect included: the broker still serves."""
    started = time.monotonic()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000})
    got: list[object] = []
    p.produce("soak-a", b"probe", on_delivery=lambda err, _m: got.append(err))
    p.flush(35)
    return round((time.monotonic() - started) * 1000, 1) if got == [None] else None


def _raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _closed_by_peer(s: socket.socket) -> bool:
    # Non-blocking first: a socket with a timeout would wait for data (or the broker's
    # idle close) instead of answering now.
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def idle_connections(node: Node, args: argparse.Namespace) -> dict[str, Any]:
    _raise_fd_limit()
    peak = Peak(node)
    socks: list[socket.socket] = []
    refused = 0
    started = time.monotonic()
    for _ in range(args.idle):
        s = socket.socket()
        s.settimeout(10)
        try:
            s.connect(("127.0.0.1", node.port))
            socks.append(s)
        except OSError:
            refused += 1
            s.close()
    opened_s = time.monotonic() - started
    time.sleep(min(5.0, args.hold_s))
    probe = produce_ms(node.bootstrap_servers)
    time.sleep(max(0.0, args.hold_s - 5))
    closed = sum(_closed_by_peer(s) for s in socks)
    for s in socks:
        s.close()
    time.sleep(2)
    return {
        "asked": args.idle,
        "opened": len(socks),
        "failed_to_open": refused,
        "open_s": round(opened_s, 1),
        "held_s": args.hold_s,
        "closed_by_broker_while_held": closed,
        "produce_ms_while_held": probe,
        **peak.done(),
    }


def slow_clients(node: Node, args: argparse.Namespace, n: int = 200) -> dict[str, Any]:
    """n connections each sending a frame that claims 64 bytes, then one byte a second."""
    peak = Peak(node)
    socks = [socket.create_connection(("127.0.0.1", node.port)) for _ in range(n)]
    for s in socks:
        s.sendall((64).to_bytes(4, "big"))
    alive = set(range(n))
    closed_at: list[float] = []
    started = time.monotonic()
    probe = produce_ms(node.bootstrap_servers)
    for _second in range(int(args.idle_ms / 1000) + 30):
        for i in sorted(alive):
            try:
                socks[i].sendall(b"\0")
                if _closed_by_peer(socks[i]):
                    raise ConnectionResetError
            except OSError:
                alive.discard(i)
                closed_at.append(time.monotonic() - started)
        if not alive:
            break
        time.sleep(1)
    for s in socks:
        s.close()
    return {
        "connections": n,
        "closed_by_broker": n - len(alive),
        "first_closed_s": round(min(closed_at), 1) if closed_at else None,
        "last_closed_s": round(max(closed_at), 1) if closed_at else None,
        "watched_s": round(time.monotonic() - started, 1),
        "produce_ms_meanwhile": probe,
        **peak.done(),
    }


def never_read(
    node: Node, args: argparse.Namespace, n: int = 20, each: int = 200
) -> dict[str, Any]:
    """n connections each pipelining `each` 1 MiB fetches and reading nothing back."""
    c = Consumer({"bootstrap.servers": node.bootstrap_servers, "group.id": "unused"})
    start_offset = c.get_watermark_offsets(TopicPartition("soak-a", 0), 10)[0]
    c.close()
    topic = FetchRequest.FetchTopic
    request = FetchRequest(
        version=4,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=MIB,
        isolation_level=0,
        topics=[
            topic(
                topic="soak-a",
                partitions=[
                    topic.FetchPartition(
                        partition=0, fetch_offset=start_offset, partition_max_bytes=MIB
                    )
                ],
            )
        ],
    )
    peak = Peak(node)
    socks: list[socket.socket] = []
    sent_bytes = 0
    for _ in range(n):
        proto = KafkaProtocol(client_id="never-reads")
        for _ in range(each):
            proto.send_request(request)
        data = bytes(proto.send_bytes())
        s = socket.create_connection(("127.0.0.1", node.port))
        s.settimeout(0.5)
        try:
            s.sendall(data)  # stops once the broker stops reading (it is blocked on us)
            sent_bytes += len(data)
        except OSError:
            pass
        socks.append(s)
    time.sleep(10)
    probe = produce_ms(node.bootstrap_servers)
    time.sleep(10)
    closed = sum(_closed_by_peer(s) for s in socks)
    for s in socks:
        s.close()
    return {
        "connections": n,
        "fetches_each": each,
        "request_bytes_accepted": sent_bytes,
        "closed_by_broker_within_20s": closed,
        "produce_ms_meanwhile": probe,
        **peak.done(),
    }


def big_fetch(node: Node, args: argparse.Namespace) -> dict[str, Any]:
    """`args.fetchers` consumers at once, each asking for --fetch-mb (100 MB) in one fetch."""
    size = args.fetch_mb * MIB
    bs = node.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("big", 1, 1, config={"segment.bytes": str(1 << 30)})])[
        "big"
    ].result(30)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.size": MIB, "acks": 1})
    value = b"b" * (100 << 10)
    count = size // len(value)
    size = count * len(value)  # what a fetcher must read: every value, whole
    for _ in range(count):
        while True:
            try:
                p.produce("big", value)
                break
            except BufferError:
                p.poll(0.1)
    p.flush(120)
    peak = Peak(node)
    got: list[int] = []
    times: list[float] = []

    def fetch_all() -> None:
        c = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": "unused",
                "enable.auto.commit": False,
                "fetch.max.bytes": size,
                "max.partition.fetch.bytes": size,
                "receive.message.max.bytes": size + MIB,
            }
        )
        c.assign([TopicPartition("big", 0, 0)])
        n, started = 0, time.monotonic()
        deadline = started + 300
        while n < size and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=1):
                if m.error() is None:
                    n += len(m.value() or b"")
        times.append(time.monotonic() - started)
        got.append(n)
        c.close()

    threads = [threading.Thread(target=fetch_all) for _ in range(args.fetchers)]
    for t in threads:
        t.start()
    probe = produce_ms(bs)
    for t in threads:
        t.join()
    return {
        "fetchers": args.fetchers,
        "bytes_each": size,
        "read_all": sum(g >= size for g in got),
        "slowest_s": round(max(times), 1),
        "produce_ms_meanwhile": probe,
        **peak.done(),
    }


LIMITS: dict[str, Callable[[Node, argparse.Namespace], dict[str, Any]]] = {
    "idle_connections": idle_connections,
    "slow_clients": slow_clients,
    "never_read": never_read,
    "big_fetch": big_fetch,
}
