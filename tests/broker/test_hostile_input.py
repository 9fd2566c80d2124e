"""Malformed and hostile requests: the broker answers or closes that one connection, keeps
serving everyone else, and its memory stays bounded."""

from __future__ import annotations

import os
import random
import socket
import struct

import pytest
from confluent_kafka.admin import AdminClient

from kafkalite import Broker
from tests.broker import rawproto


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def still_serves(broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    assert admin.list_topics(timeout=10).brokers


def send_raw(broker: Broker, data: bytes) -> socket.socket:
    sock = rawproto.connect(broker.bootstrap_servers)
    sock.sendall(data)
    return sock


CASES = {
    "short frame": struct.pack(">i", 2) + b"\x00\x12",
    "negative length": struct.pack(">i", -5),
    "2 GiB length": struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 64,
    "unknown api key": rawproto.frame(rawproto.header(999, 0, 1)),
    "unsupported produce version": rawproto.frame(rawproto.header(0, 99, 1) + b"\x00" * 20),
    # Metadata v1 whose topic array claims 2^31-1 entries with no bytes behind it.
    "huge array length": rawproto.frame(rawproto.header(3, 1, 1) + struct.pack(">i", 0x7FFFFFFF)),
    # A string length far past the frame's end.
    "huge string length": rawproto.frame(
        rawproto.header(3, 1, 1) + struct.pack(">ih", 1, 0x7FFF) + b"ab"
    ),
    "truncated header": rawproto.frame(b"\x00\x03\x00"),
    "produce with garbage records": rawproto.frame(
        rawproto.header(0, 3, 1)
        + struct.pack(">hhi", -1, 1, 1000)
        + struct.pack(">ih", 1, 1)
        + b"t"
        + struct.pack(">iii", 1, 0, 40)
        + os.urandom(40)
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_request_closes_or_answers_and_broker_survives(broker: Broker, case: str) -> None:
    sock = send_raw(broker, CASES[case])
    sock.settimeout(5)
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, TimeoutError):
        data = b""
    if case == "produce with garbage records" and data:
        # Answered with a per-partition error rather than a closed connection.
        assert len(data) > 8
    sock.close()
    still_serves(broker)


def test_api_versions_of_unknown_version_gets_error_35_and_our_list(broker: Broker) -> None:
    sock = send_raw(broker, rawproto.frame(rawproto.header(18, 99, 42)))
    resp = rawproto.read_frame(sock)
    corr, error, count = struct.unpack(">ihi", resp[:10])
    assert (corr, error) == (42, 35)
    keys = {struct.unpack(">hhh", resp[10 + 6 * i : 16 + 6 * i])[0] for i in range(count)}
    assert {0, 1, 2, 3, 18} <= keys
    sock.close()


def test_random_frames_never_kill_the_broker_and_memory_stays_bounded(broker: Broker) -> None:
    rng = random.Random(1234)
    still_serves(broker)
    before = rss_mib()
    for i in range(300):
        size = rng.randint(0, 300)
        body = bytes(rng.getrandbits(8) for _ in range(size))
        if i % 3 == 0 and size >= 4:
            # Plausible header: a real api key and version, garbage after.
            key, version = rng.choice([(0, 3), (1, 4), (3, 1), (3, 12), (18, 3), (19, 2)])
            body = struct.pack(">hh", key, version) + body[4:]
        sock = send_raw(broker, struct.pack(">i", len(body)) + body)
        sock.settimeout(2)
        try:
            sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            pass
        sock.close()
    still_serves(broker)
    assert rss_mib() - before < 200, "hostile frames must not grow memory"


def test_oversized_frame_is_refused_before_it_is_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Broker(log_dirs=tmp_path, config={"socket.request.max.bytes": 1024}) as b:
        sock = send_raw(b, struct.pack(">i", 4096) + b"\x00" * 100)
        assert rawproto.closed_by_peer(sock)
        sock.close()
        still_serves(b)
