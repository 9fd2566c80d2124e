"""Disk a partition takes: close to its bytes when it holds little (the block reservation
ahead of appends follows the write rate), the fixed 64 MiB only with `preallocate=true`,
and never past the data once the broker has stopped."""

from __future__ import annotations

import signal
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker
from tests.broker.test_cli_and_daemon import free_port
from tests.broker.test_topic_lifecycle_crash import start_daemon

MIB = 1 << 20
PARTITIONS = 3


def allocated(dirs: list[Path]) -> tuple[int, int]:
    """(bytes allocated on disk, bytes of file content) of every file under `dirs`."""
    blocks = size = 0
    for d in dirs:
        for f in d.rglob("*"):
            if f.is_file():
                st = f.stat()
                blocks += st.st_blocks * 512
                size += st.st_size
    return blocks, size


def one_record_per_partition(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=config)])[topic].result(10)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(PARTITIONS):
        p.produce(topic, value=b"v" * 100, partition=i)
    assert p.flush(15) == 0


def test_one_record_partitions_take_about_their_bytes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as b:
        one_record_per_partition(b.bootstrap_servers, "small", {})
        dirs = [data / f"small-{i}" for i in range(PARTITIONS)]
        running, _ = allocated(dirs)
        # A few 4 KiB blocks per file, nothing reserved ahead (it was 3 x 64 MiB).
        assert running < 256 << 10, running
    stopped, size = allocated(dirs)
    assert size > 0
    assert stopped < 256 << 10, stopped


def test_preallocate_reserves_64_mib_until_the_broker_stops(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(log_dirs=data) as b:
        one_record_per_partition(b.bootstrap_servers, "big", {"preallocate": "true"})
        dirs = [data / f"big-{i}" for i in range(PARTITIONS)]
        running, _ = allocated(dirs)
        assert running >= PARTITIONS * 64 * MIB, running
    stopped, _ = allocated(dirs)
    assert stopped < 256 << 10, stopped


def test_a_reservation_left_by_a_crash_is_released(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    proc = start_daemon(port, data)
    try:
        one_record_per_partition(f"127.0.0.1:{port}", "crashed", {"preallocate": "true"})
        dirs = [data / f"crashed-{i}" for i in range(PARTITIONS)]
        assert allocated(dirs)[0] >= PARTITIONS * 64 * MIB
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    # The killed broker released nothing; the next one, without a single append, does.
    assert allocated(dirs)[0] >= PARTITIONS * 64 * MIB
    port = free_port()
    proc = start_daemon(port, data)
    proc.send_signal(signal.SIGTERM)
    proc.wait(15)
    assert allocated(dirs)[0] < 256 << 10
