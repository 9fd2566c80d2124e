"""A full disk: appends fail with KAFKA_STORAGE_ERROR, the broker says so once per log dir
(naming the dir and the error) instead of nothing, and every acknowledged record is still
there after space returns and the broker restarts. Needs root to mount a small tmpfs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalite import Broker
from tests.faults.conftest import consume_values, create_topic

FREE_BYTES = 2 << 20
RECORD_BYTES = 1024
RECORDS = 4000


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (mount(2) is privileged)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def value(i: int) -> bytes:
    return (b"%08d" % i) * (RECORD_BYTES // 8)


def test_disk_full_is_logged_and_keeps_acknowledged_records(
    small_fs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = small_fs / "data"
    filler = small_fs / "filler"
    acked: dict[int, bytes] = {}
    failed: list[str] = []
    broker = Broker(log_dirs=data).start()
    try:
        # Small segments, so segments roll (new files, index writes) while the disk fills.
        create_topic(broker.bootstrap_servers, "t", {"segment.bytes": str(256 << 10)})
        # Leave FREE_BYTES: the log fills it long before RECORDS are in.
        with filler.open("wb") as f:
            f.write(b"\0" * (shutil.disk_usage(small_fs).free - FREE_BYTES))
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "batch.size": 64 << 10,
                "message.timeout.ms": 4000,
            }
        )

        def report(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failed.append(err.str())

        started = time.monotonic()
        for i in range(RECORDS):
            producer.produce("t", value(i), on_delivery=report)
            producer.poll(0)
        producer.flush(60)
        elapsed = time.monotonic() - started
    finally:
        try:
            broker.stop()
            stop_error = ""
        except OSError as e:
            # Closing writes index files and markers: on a full disk that may fail, which
            # stop() reports; the restart below recovers the logs.
            stop_error = str(e)
    assert not stop_error or "No space left on device" in stop_error, stop_error
    assert acked, "some records fit before the disk filled"
    assert failed, "the disk filled up"
    lines = [
        line for line in capfd.readouterr().err.splitlines() if "No space left on device" in line
    ]
    # Once per log dir per 30 s, not once per failed append.
    assert 1 <= len(lines) <= 1 + int(elapsed // 30), lines
    assert f"in log dir {data}:" in lines[0], lines[0]
    assert "ERROR" in lines[0] and "KAFKA_STORAGE_ERROR" in lines[0]

    filler.unlink()
    with Broker(log_dirs=data) as broker:
        got = dict(consume_values(broker.bootstrap_servers, "t", max(acked) + 1))
        lost = {o for o in acked if got.get(o) != acked[o]}
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
        # Space is back: producing resumes.
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        resumed: list[object] = []
        producer.produce("t", b"after", on_delivery=lambda err, _m: resumed.append(err))
        producer.flush(10)
        assert resumed == [None]
