"""The log scrubber: a byte flipped inside the records of a closed segment (header intact,
so plain reads would serve it and librdkafka, which skips CRC checks by default, would
deliver the corrupt value) is found in the background, logged once and refused with
CORRUPT_MESSAGE; `kafkalite log scrub` then lets the operator skip it or truncate there."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafkalite import Broker
from tests.faults.conftest import create_topic, log_end
from tests.faults.test_damaged_logs import (
    BATCHES,
    PER_BATCH,
    batch_positions,
    produce_batches,
    segments,
)

SCRUB_FAST = {"kafkalite.log.scrub.interval.ms": 300}


def damage_a_record(data: Path) -> tuple[Path, int, int]:
    """Flip a byte inside the fourth batch's records of the first (closed) segment;
    returns the segment, the batch's position and its base offset."""
    first = segments(data / "t-0")[0]
    position, base = batch_positions(first)[3]
    with first.open("r+b") as f:
        f.seek(position + 100)
        byte = f.read(1)
        f.seek(position + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    return first, position, base


def read_all(bootstrap: str) -> tuple[list[int], list[KafkaError]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("t", 0, 0)])
    offsets: list[int] = []
    errors: list[KafkaError] = []
    deadline = time.monotonic() + 8
    try:
        while time.monotonic() < deadline and not errors:
            msgs = consumer.consume(100, timeout=0.2)
            for m in msgs:
                if m.error():
                    errors.append(m.error())
                else:
                    offsets.append(m.offset())
            if offsets and offsets[-1] == BATCHES * PER_BATCH - 1:
                break
    finally:
        consumer.close()
    return offsets, errors


def scrub_cli(data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", "log", "scrub", "--log-dirs", str(data), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def written(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as broker:
        create_topic(broker.bootstrap_servers, "t", {"segment.bytes": "12000"})
        produce_batches(broker.bootstrap_servers, "t")
    return data


def test_the_running_broker_finds_damage_and_refuses_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = written(tmp_path)
    segment, position, base = damage_a_record(data)
    with Broker(log_dirs=data, config=SCRUB_FAST) as broker:
        deadline = time.monotonic() + 15
        found: list[str] = []
        seen = ""
        while time.monotonic() < deadline and not found:
            time.sleep(0.2)
            seen += capfd.readouterr().err
            found = [line for line in seen.splitlines() if "Damaged batch" in line]
        assert found, seen[-2000:]
        offsets, errors = read_all(broker.bootstrap_servers)
        # Everything before the damaged batch, then CORRUPT_MESSAGE: no corrupt value, no gap.
        assert offsets == list(range(base)), offsets[-5:]
        assert [e.code() for e in errors] == [KafkaError.INVALID_MSG], errors
        assert log_end(broker.bootstrap_servers, "t") == BATCHES * PER_BATCH
        time.sleep(1)  # further passes find nothing new: logged once
        seen += capfd.readouterr().err
    lines = [line for line in seen.splitlines() if "Damaged batch" in line]
    assert len(lines) == 1, lines
    assert f"{segment}" in lines[0] and f"bytes {position}.." in lines[0], lines[0]
    assert f"offset {base} or later" in lines[0] and "CRC" in lines[0], lines[0]
    assert "(kafkalite.log.LogScrubber)" in lines[0] and "ERROR" in lines[0], lines[0]


def test_the_operator_skips_the_damage_with_log_scrub(tmp_path: Path) -> None:
    data = written(tmp_path)
    _, position, base = damage_a_record(data)
    with Broker(log_dirs=data):
        busy = scrub_cli(data)
        assert busy.returncode == 2 and "in use by a running broker" in busy.stderr, busy
    report = scrub_cli(data, "--json")
    assert report.returncode == 1, report  # damage found, nothing decided
    [mark] = json.loads(report.stdout)
    assert (mark["partition"], mark["bytes"][0], mark["first_offset"]) == ("t-0", position, base)
    assert mark["action"] == "fail" and "CRC" in mark["why"]
    assert scrub_cli(data, "--skip").returncode == 0
    with Broker(log_dirs=data) as broker:
        offsets, errors = read_all(broker.bootstrap_servers)
    assert not errors, errors
    damaged = set(range(base, base + PER_BATCH))
    assert offsets == [o for o in range(BATCHES * PER_BATCH) if o not in damaged]


def test_the_operator_truncates_at_the_damage(tmp_path: Path) -> None:
    data = written(tmp_path)
    _, _, base = damage_a_record(data)
    result = scrub_cli(data, "--truncate", "--json")
    assert result.returncode == 0, result
    [mark] = json.loads(result.stdout)
    assert (mark["action"], mark["log_end_offset"]) == ("truncated", base)
    with Broker(log_dirs=data) as broker:
        assert log_end(broker.bootstrap_servers, "t") == base
        offsets, errors = read_all(broker.bootstrap_servers)
    assert offsets == list(range(base)) and not errors
