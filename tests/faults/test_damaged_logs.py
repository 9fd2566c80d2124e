"""Damaged segment files, with the broker's log as evidence: a corrupt batch header in a
closed segment is CORRUPT_MESSAGE for a real consumer (and one log line naming the file and
byte), never a silent gap; recovery says what it truncates and why."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafkalite import Broker, _core
from tests.faults.conftest import consume_values, create_topic, log_end

BATCHES, PER_BATCH = 30, 10


def produce_batches(bootstrap: str, topic: str) -> None:
    with _core.KafkaClient(bootstrap) as client:
        for b in range(BATCHES):
            records = [(None, b"value-%04d-" % (b * PER_BATCH + i) * 8) for i in range(PER_BATCH)]
            client.produce(topic, 0, _core.build_batch(records))


def batch_positions(segment: Path) -> list[tuple[int, int]]:
    """(byte position, base offset) of each batch in a segment file."""
    data = segment.read_bytes()
    out, at = [], 0
    while at < len(data):
        base, length = struct.unpack_from(">qi", data, at)
        out.append((at, base))
        at += 12 + length
    return out


def segments(dir: Path) -> list[Path]:
    return sorted(dir.glob("*.log"))


def test_corrupt_header_in_a_closed_segment_is_corrupt_message(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with Broker(log_dirs=tmp_path / "data") as broker:
        create_topic(broker.bootstrap_servers, "t", {"segment.bytes": "12000"})
        produce_batches(broker.bootstrap_servers, "t")
        first = segments(tmp_path / "data" / "t-0")[0]
        assert len(segments(tmp_path / "data" / "t-0")) > 2, "closed segments to damage"
        position, base = batch_positions(first)[3]
        with first.open("r+b") as f:
            f.seek(position + 16)  # the magic byte
            f.write(b"\xff")

        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "unused",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("t", 0, 0)])
        offsets: list[int] = []
        errors: list[KafkaError] = []
        deadline = time.monotonic() + 8
        try:
            while time.monotonic() < deadline and not errors:
                for m in consumer.consume(100, timeout=0.2):
                    if m.error():
                        errors.append(m.error())
                    else:
                        offsets.append(m.offset())
        finally:
            consumer.close()
        # Everything before the damaged batch, in order; nothing after it: no gap.
        assert offsets == list(range(base)), offsets[-5:]
        assert [e.code() for e in errors] == [KafkaError.INVALID_MSG], errors
        # Later segments and the high watermark are untouched.
        assert log_end(broker.bootstrap_servers, "t") == BATCHES * PER_BATCH
    lines = [line for line in capfd.readouterr().err.splitlines() if "corrupt batch" in line]
    assert len(lines) == 1, lines
    assert f"{first} at byte {position}" in lines[0], lines[0]
    assert "ERROR" in lines[0] and lines[0].endswith("(kafkalite.log.LogSegment)")


def test_recovery_logs_the_truncated_tail(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as broker:
        create_topic(broker.bootstrap_servers, "t")
        produce_batches(broker.bootstrap_servers, "t")
    newest = segments(data / "t-0")[-1]
    size = newest.stat().st_size
    last_position, last_base = batch_positions(newest)[-1]
    with newest.open("r+b") as f:
        f.truncate(size - 100)
    capfd.readouterr()
    with Broker(log_dirs=data) as broker:
        assert log_end(broker.bootstrap_servers, "t") == last_base
        got = consume_values(broker.bootstrap_servers, "t", last_base)
        assert [o for o, _ in got] == list(range(last_base))
    lines = [line for line in capfd.readouterr().err.splitlines() if "Found invalid" in line]
    assert len(lines) == 1, lines
    line = lines[0]
    for expected in (
        f"log segment {newest} at byte {last_position}",
        f"Truncating the segment from {size - 100} to {last_position} bytes",
        f"offsets {last_base}..={last_base + PER_BATCH - 1}",
        f"ends before offset {last_base}",
        "(a torn write)",
        "WARN",
        "(kafkalite.log.LogLoader)",
    ):
        assert expected in line, (expected, line)
