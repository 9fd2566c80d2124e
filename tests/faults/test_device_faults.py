"""Device faults through the single-node checker: the log dir on a FUSE layer that loses
every unsynced write on a power cut or answers EIO, and on a tmpfs that fills up.

This kernel has no device-mapper (so no dm-flakey or dm-log-writes); the FUSE layer
(kafkalite.chaos.fusefs) stands in for both. Needs root, /dev/fuse, libfuse2 and fusepy
(scripts/test.sh installs them); each test says which is missing when it cannot run."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.chaos.fusemount import FuseMount
from kafkalite.chaos.single_run import run_fault
from tests.faults.test_single_node_chaos import assert_clean


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[FuseMount]:
    why = FuseMount.available()
    if why is not None:
        pytest.skip(f"no FUSE layer here: {why}")
    with FuseMount(tmp_path / "platter", tmp_path / "mnt") as m:
        yield m


def test_the_fuse_layer_loses_exactly_the_unsynced_writes(mount: FuseMount) -> None:
    path = mount.mountpoint / "f"
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    os.write(fd, b"synced")
    os.fsync(fd)
    os.write(fd, b"+lost")
    os.close(fd)
    (mount.mountpoint / "never-synced").write_bytes(b"gone")
    assert path.read_bytes() == b"synced+lost"
    mount.power_cut()
    assert path.read_bytes() == b"synced"
    assert (mount.mountpoint / "never-synced").read_bytes() == b""  # the name survives
    mount.fail(True)
    with pytest.raises(OSError, match="Input/output error"):
        path.read_bytes()
    mount.fail(False)
    assert path.read_bytes() == b"synced"


def test_power_loss_with_a_flush_per_message_loses_nothing(
    tmp_path: Path, mount: FuseMount
) -> None:
    row = run_fault(
        "power-loss",
        3,
        tmp_path,
        log_dir=mount.mountpoint / "logs",
        mount=mount,
        rate=60,
        overrides={"log.flush.interval.messages": 1},
    )
    assert row["injected"] == 3 and row["acked"] > 200, row
    assert_clean(row)


def test_power_loss_with_default_flush_keeps_order_and_makes_nothing_up(
    tmp_path: Path, mount: FuseMount
) -> None:
    # Kafka's default: no fsync before the ack, so acknowledged writes and committed
    # offsets (in __consumer_offsets, unsynced too) may be lost and move back -- the bench
    # reports how many; what is left must still be in order, once, and nothing made up.
    row = run_fault(
        "power-loss", 2, tmp_path, log_dir=mount.mountpoint / "logs", mount=mount, rate=60
    )
    assert row["injected"] == 2 and row["acked"] > 200, row
    assert (row["duplicated"], row["reordered"], row["phantom"]) == (0, 0, 0), row


def test_eio_keeps_the_broker_up_and_every_acknowledged_write(
    tmp_path: Path, mount: FuseMount
) -> None:
    row = run_fault("eio", 2, tmp_path, log_dir=mount.mountpoint / "logs", mount=mount, rate=60)
    assert row["injected"] == 2, row
    assert not row["notes"], row["notes"]  # "the broker died on EIO"
    assert_clean(row)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_disk_full_keeps_the_broker_up_and_every_acknowledged_write(
    tmp_path: Path, tmpfs: Path
) -> None:
    row = run_fault("disk-full", 2, tmp_path / "data", log_dir=tmpfs / "logs", rate=100)
    assert row["injected"] == 2, row
    assert not row["notes"], row["notes"]  # "the broker died on a full disk"
    assert_clean(row)
