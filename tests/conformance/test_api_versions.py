"""Kafka 4.4's own `kafka-broker-api-versions` against kafkalite and Apache Kafka side by
side: every API kafkalite serves shows Kafka's range; and the versions Kafka 4 advertises
but refuses (Produce v0-2) are refused the same way."""

from __future__ import annotations

import re
import struct
import subprocess

import pytest

from kafkalite.bench import kafka_ref
from kafkalite.conformance.brokers import KAFKA_VERSION
from tests.broker import rawproto

LINE = re.compile(r"^\s*(\w+)\((\d+)\): (?:(\d+) to (\d+)|(\d+)|UNSUPPORTED)")


def api_versions(bootstrap: str) -> dict[str, tuple[int, int] | None]:
    """{api name: (min, max) or None for UNSUPPORTED}, as the Java tool prints them."""
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(KAFKA_VERSION),
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        ["--bootstrap-server", bootstrap],
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    ranges: dict[str, tuple[int, int] | None] = {}
    for part in out.replace(",", "\n").splitlines():
        m = LINE.match(part)
        if not m:
            continue
        name, low, high, only = m.group(1), m.group(3), m.group(4), m.group(5)
        if low is not None:
            ranges[name] = (int(low), int(high))
        elif only is not None:
            ranges[name] = (int(only), int(only))
        else:
            ranges[name] = None
    return ranges


# Kafka serves these only with a client telemetry receiver plugin, which its distribution
# does not ship; kafkalite is its own receiver (see the [[unscripted]] entries of
# python/kafkalite/conformance/allowlist.toml).
KAFKA_NEEDS_A_PLUGIN = {"GetTelemetrySubscriptions", "PushTelemetry"}
# Share-group APIs kafkalite serves at Kafka 4.4's versions, newer than a 4.1 reference's.
KAFKA_44_SHARE = {
    "ShareFetch": (1, 2),
    "ShareAcknowledge": (1, 2),
    "DescribeShareGroupOffsets": (0, 1),
    "WriteShareGroupState": (0, 1),
    "ReadShareGroupStateSummary": (0, 1),
}


def test_broker_api_versions_match_kafka_for_every_api_served(brokers: tuple[str, str]) -> None:
    ours, theirs = api_versions(brokers[0]), api_versions(brokers[1])
    served = {name: r for name, r in ours.items() if r is not None}
    assert len(served) >= 45, served
    different = {name: (r, theirs.get(name)) for name, r in served.items() if theirs.get(name) != r}
    assert {name: different.pop(name) for name in KAFKA_NEEDS_A_PLUGIN} == {
        name: ((0, 0), None) for name in KAFKA_NEEDS_A_PLUGIN
    }
    for name, expected in KAFKA_44_SHARE.items():
        assert served.get(name) == expected, name
        different.pop(name, None)
    assert not different, different
    # The versions issues 16 and 35 name, explicitly (35: Kafka 4.4.0's).
    for name, expected in {
        "Produce": (0, 13),
        "Fetch": (4, 18),
        "ListOffsets": (1, 11),
        "Metadata": (0, 13),
        "OffsetCommit": (2, 10),
        "OffsetFetch": (1, 10),
        "ListGroups": (0, 5),
        "ApiVersions": (0, 5),
        "DeleteGroups": (0, 3),
        "DescribeLogDirs": (1, 5),
        "TxnOffsetCommit": (0, 6),
        "WriteTxnMarkers": (1, 2),
    }.items():
        assert served[name] == expected, name


def produce_v2(bootstrap: str) -> bool:
    """Send a Produce v2 (old message format era) request; True if the broker closes."""
    topic = b"produce-v2"
    body = (
        struct.pack(">hi", 1, 5000)  # acks, timeout
        + struct.pack(">i", 1)
        + struct.pack(">h", len(topic))
        + topic
        + struct.pack(">iii", 1, 0, 0)  # one partition, index 0, empty message set
    )
    sock = rawproto.connect(bootstrap)
    try:
        sock.sendall(rawproto.frame(rawproto.header(0, 2, 7) + body))
        return rawproto.closed_by_peer(sock)
    finally:
        sock.close()


@pytest.mark.parametrize("side", [0, 1], ids=["kafkalite", "kafka"])
def test_produce_v2_is_advertised_but_closes_the_connection(
    brokers: tuple[str, str], side: int
) -> None:
    assert produce_v2(brokers[side])
