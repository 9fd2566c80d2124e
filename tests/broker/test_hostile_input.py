"""Malformed and hostile requests: the broker answers or closes that one connection, keeps
serving everyone else, and its memory stays bounded. The broker is in-process, so this
process's RSS is the broker's."""

from __future__ import annotations

import os
import random
import socket
import struct
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite import Broker
from tests.broker import rawproto
from tests.broker.rawproto import frame, header, header_v2, uvarint

RSS_GROWTH_MIB_MAX = 200


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


def answer_or_close(sock: socket.socket, timeout: float = 5) -> bytes:
    """What the broker sends back before closing; b"" when it just closes."""
    sock.settimeout(timeout)
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


CASES = {
    "short frame": struct.pack(">i", 2) + b"\x00\x12",
    "negative length": struct.pack(">i", -5),
    "2 GiB length": struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 64,
    "truncated header": frame(b"\x00\x03\x00"),
    "client id longer than the frame": frame(struct.pack(">hhih", 3, 1, 1, 0x7FFF) + b"ab"),
    "client id length -2": frame(struct.pack(">hhih", 3, 1, 1, -2) + b"\x00" * 4),
    "unknown api key": frame(header(999, 0, 1)),
    "negative api key": frame(header(-1, 0, 1)),
    "unsupported produce version": frame(header(0, 99, 1) + b"\x00" * 20),
    "fetch v0 (below the 2.1 baseline)": frame(header(1, 0, 1) + b"\x00" * 30),
    "negative version": frame(header(3, -1, 1) + b"\x00" * 8),
    # The 8-byte Metadata v0 request of the kafka-protocol crate's fuzz finding: a topic
    # array length that would be a ~3.6 GiB allocation if trusted.
    "metadata v0 huge array": frame(header(3, 0, 1, client_id="") + struct.pack(">i", 0x7FFFFFFF)),
    "metadata v1 huge array": frame(header(3, 1, 1) + struct.pack(">i", 0x7FFFFFFF)),
    "metadata v1 string past the end": frame(
        header(3, 1, 1) + struct.pack(">ih", 1, 0x7FFF) + b"ab"
    ),
    "metadata v12 huge compact array": frame(header_v2(3, 12, 1) + uvarint(0xFFFFFFFF)),
    "metadata v12 overlong varint": frame(header_v2(3, 12, 1) + b"\xff" * 12),
    "header v2 huge tagged fields": frame(header(3, 12, 1) + uvarint(0x7FFFFFFF)),
    "produce v9 huge topic array": frame(
        header_v2(0, 9, 1) + b"\x00" + struct.pack(">hi", -1, 1000) + uvarint(0x7FFFFFFF)
    ),
    "produce with garbage records": frame(
        header(0, 3, 1)
        + struct.pack(">hhi", -1, 1, 1000)
        + struct.pack(">ih", 1, 1)
        + b"t"
        + struct.pack(">iii", 1, 0, 40)
        + os.urandom(40)
    ),
    "produce records length past the end": frame(
        header(0, 3, 1)
        + struct.pack(">hhi", -1, 1, 1000)
        + struct.pack(">ih", 1, 1)
        + b"t"
        + struct.pack(">iii", 1, 0, 0x7FFFFFF0)
        + b"\x00" * 61
    ),
    "fetch v4 huge partition array": frame(
        header(1, 4, 1) + struct.pack(">iiiib", -1, 100, 1, 1024, 0) + struct.pack(">i", 0x7FFFFFFF)
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_request_closes_or_answers_and_broker_survives(broker: Broker, case: str) -> None:
    still_serves(broker)
    before = rss_mib()
    sock = send_raw(broker, CASES[case])
    data = answer_or_close(sock)
    sock.close()
    if data:
        # Whatever it answers is a well-formed frame for our correlation id.
        size, corr = struct.unpack(">ii", data[:8])
        assert size >= len(data) - 4
        assert corr == 1
    still_serves(broker)
    assert rss_mib() - before < RSS_GROWTH_MIB_MAX


def test_api_versions_of_unknown_version_gets_error_35_and_our_list(broker: Broker) -> None:
    sock = send_raw(broker, frame(header(18, 99, 42)))
    resp = rawproto.read_frame(sock)
    # v0 response header (correlation id only) and a v0 body: error code, int32 array of
    # (api key, min version, max version).
    corr, error, count = struct.unpack(">ihi", resp[:10])
    assert (corr, error) == (42, 35)
    assert len(resp) == 10 + 6 * count
    ranges = {
        key: (low, high)
        for key, low, high in (
            struct.unpack(">hhh", resp[10 + 6 * i : 16 + 6 * i]) for i in range(count)
        )
    }
    assert {0, 1, 2, 3, 18} <= set(ranges)
    assert ranges[18][0] == 0 and ranges[18][1] >= 3
    # The connection stays usable: a proper ApiVersions v0 on the same socket works.
    sock.sendall(frame(header(18, 0, 43)))
    corr, error = struct.unpack(">ih", rawproto.read_frame(sock)[:6])
    assert (corr, error) == (43, 0)
    sock.close()
    still_serves(broker)


def test_random_frames_never_kill_the_broker_and_memory_stays_bounded(broker: Broker) -> None:
    rng = random.Random(1234)
    still_serves(broker)
    before = rss_mib()
    for i in range(300):
        size = rng.randint(0, 300)
        body = bytes(rng.getrandbits(8) for _ in range(size))
        if i % 3 == 0 and size >= 4:
            # Plausible header: a real api key and version, garbage after.
            key, version = rng.choice(
                [(0, 3), (0, 9), (1, 4), (1, 12), (2, 1), (3, 1), (3, 12), (18, 3), (19, 2)]
            )
            body = struct.pack(">hh", key, version) + body[4:]
        sock = send_raw(broker, struct.pack(">i", len(body)) + body)
        sock.settimeout(2)
        try:
            sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            pass
        sock.close()
    still_serves(broker)
    assert rss_mib() - before < RSS_GROWTH_MIB_MAX, "hostile frames must not grow memory"


def test_many_connections_announcing_huge_frames_stay_bounded(broker: Broker) -> None:
    """Each connection announces a 100 MB frame (under socket.request.max.bytes) and sends
    only its first 64 KiB: memory must follow the bytes received, not the bytes claimed."""
    still_serves(broker)
    before = rss_mib()
    socks = []
    for _ in range(40):
        sock = rawproto.connect(broker.bootstrap_servers)
        sock.sendall(struct.pack(">i", 100_000_000) + header(3, 1, 1) + b"\x00" * 65536)
        socks.append(sock)
    still_serves(broker)
    grown = rss_mib() - before
    for sock in socks:
        sock.close()
    assert grown < RSS_GROWTH_MIB_MAX
    still_serves(broker)


POLICY_VIOLATION = 44


def create_topics_v2(name: str, partitions: int, validate_only: bool) -> bytes:
    return frame(
        header(19, 2, 1)
        + struct.pack(">ih", 1, len(name))
        + name.encode()
        + struct.pack(">ih", partitions, 1)  # partitions, replication factor
        + struct.pack(">ii", 0, 0)  # no assignments, no configs
        + struct.pack(">ib", 1000, validate_only)
    )


def create_partitions_v0(name: str, count: int, validate_only: bool) -> bytes:
    return frame(
        header(37, 0, 1)
        + struct.pack(">ih", 1, len(name))
        + name.encode()
        + struct.pack(">ii", count, -1)  # new total count, null assignments
        + struct.pack(">ib", 1000, validate_only)
    )


def topic_error_code(resp: bytes, name: str) -> int:
    """Error code of the only topic in a CreateTopics v2 / CreatePartitions v0 response."""
    # correlation id, throttle time, array count, name
    pos = 4 + 4 + 4 + 2 + len(name)
    assert resp[pos - len(name) : pos] == name.encode()
    return int(struct.unpack(">h", resp[pos : pos + 2])[0])


@pytest.mark.parametrize("api", ["CreateTopics", "CreatePartitions"])
@pytest.mark.parametrize("validate_only", [True, False])
def test_absurd_partition_counts_are_refused_up_front(
    broker: Broker, api: str, validate_only: bool
) -> None:
    if api == "CreateTopics":
        request = create_topics_v2("huge", 0x7FFFFFFF, validate_only=validate_only)
    else:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("huge", 1, 1)])["huge"].result(10)
        request = create_partitions_v0("huge", 0x7FFFFFFF, validate_only=validate_only)
    sock = send_raw(broker, request)
    resp = rawproto.read_frame(sock)
    sock.close()
    assert topic_error_code(resp, "huge") == POLICY_VIOLATION
    # Nothing was created: the topic is absent, or still has its one partition.
    assert len(list(broker.log_dirs[0].glob("huge-*"))) == (0 if api == "CreateTopics" else 1)
    still_serves(broker)


def test_a_large_partition_increase_does_not_stall_other_requests(broker: Broker) -> None:
    """Thousands of partition dirs take seconds to make; meanwhile a second admin request
    waits for them (one admin change at a time) but Metadata is still answered. Found by
    the conformance fuzzer: both runtime workers once sat blocked, one making dirs and the
    other waiting for it, and every connection stalled."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("wide", 1, 1)])["wide"].result(10)
    grown = admin.create_partitions([NewPartitions("wide", 1500)], request_timeout=120)
    waiting = admin.create_topics([NewTopic("behind", 1, 1)], request_timeout=120)
    time.sleep(0.3)  # both admin requests reach the broker before the probes start
    answered_meanwhile = 0
    prober = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    while not grown["wide"].done():
        if prober.list_topics(timeout=30).brokers and not grown["wide"].done():
            answered_meanwhile += 1
    grown["wide"].result(120)
    waiting["behind"].result(120)
    assert answered_meanwhile > 0
    assert len(prober.list_topics(topic="wide", timeout=10).topics["wide"].partitions) == 1500


def vm_size_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmSize")


def test_announced_frame_size_is_not_reserved_up_front(broker: Broker) -> None:
    """Address space, not just RSS: 40 connections announcing 100 MB each must not map 4 GB
    (under vm.overcommit_memory=2 or a ulimit -v, that is an allocation failure and the
    process aborts)."""
    still_serves(broker)
    before = vm_size_mib()
    socks = []
    for _ in range(40):
        sock = rawproto.connect(broker.bootstrap_servers)
        sock.sendall(struct.pack(">i", 100_000_000) + header(3, 1, 1))
        socks.append(sock)
    still_serves(broker)
    grown = vm_size_mib() - before
    for sock in socks:
        sock.close()
    assert grown < 1024, f"address space grew {grown:.0f} MiB"


def test_oversized_frame_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with Broker(log_dirs=tmp_path, config={"socket.request.max.bytes": 1024}) as b:
        sock = send_raw(b, struct.pack(">i", 4096) + b"\x00" * 100)
        assert rawproto.closed_by_peer(sock)
        sock.close()
        still_serves(b)
