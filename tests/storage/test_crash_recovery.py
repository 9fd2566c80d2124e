"""Crash tests: a child process appends and dies without closing the log; the test then
damages the files the way a crash or a bad disk would, reopens, and checks that every batch
fully written before the damage reads back intact and nothing after it does."""

from __future__ import annotations

from pathlib import Path

from kafkalite import _core
from tests.storage.conftest import (
    batch_for,
    batches_in,
    expected_records,
    read_all,
    write_then_crash,
)

SEGMENT = f"{0:020d}"


def reopen(log_dir: Path, config: dict[str, object] | None = None) -> _core.PartitionLog:
    return _core.PartitionLog(log_dir, config or {})


def test_crash_without_damage_loses_nothing(log_dir: Path) -> None:
    write_then_crash(log_dir, 20, {})
    log = reopen(log_dir)
    assert log.log_end_offset == 200
    assert read_all(log) == expected_records(range(20))


def test_file_cut_mid_batch(log_dir: Path) -> None:
    write_then_crash(log_dir, 20, {})
    log_file = log_dir / f"{SEGMENT}.log"
    last = batches_in(log_file)[-1]
    with log_file.open("r+b") as f:
        f.truncate(last.position + last.size // 2)
    log = reopen(log_dir)
    assert log.log_end_offset == 190
    assert read_all(log) == expected_records(range(19))
    assert log_file.stat().st_size == last.position, "the torn tail is cut"
    assert log.append(batch_for(19)).first_offset == 190
    assert read_all(log) == expected_records(range(20))


def test_flipped_byte_in_last_batch(log_dir: Path) -> None:
    write_then_crash(log_dir, 20, {})
    log_file = log_dir / f"{SEGMENT}.log"
    last = batches_in(log_file)[-1]
    data = bytearray(log_file.read_bytes())
    data[last.position + last.size - 7] ^= 0x01
    log_file.write_bytes(data)
    log = reopen(log_dir)
    assert log.log_end_offset == 190
    assert read_all(log) == expected_records(range(19))


def test_flipped_byte_mid_log_cuts_everything_after(log_dir: Path) -> None:
    write_then_crash(log_dir, 20, {})
    log_file = log_dir / f"{SEGMENT}.log"
    bad = batches_in(log_file)[7]
    data = bytearray(log_file.read_bytes())
    data[bad.position + 70] ^= 0x80
    log_file.write_bytes(data)
    log = reopen(log_dir)
    assert log.log_end_offset == 70
    assert read_all(log) == expected_records(range(7))


def test_garbage_length_field_is_not_trusted(log_dir: Path) -> None:
    write_then_crash(log_dir, 5, {})
    log_file = log_dir / f"{SEGMENT}.log"
    last = batches_in(log_file)[-1]
    data = bytearray(log_file.read_bytes())
    data[last.position + 8 : last.position + 12] = (0x7FFFFFF0).to_bytes(4, "big")
    log_file.write_bytes(data)
    log = reopen(log_dir)
    assert log.log_end_offset == 40
    assert read_all(log) == expected_records(range(4))


def test_deleted_and_corrupt_indexes_are_rebuilt(log_dir: Path) -> None:
    size = len(batch_for(0))
    config = {"segment.bytes": size * 5, "index.interval.bytes": 0}
    write_then_crash(log_dir, 20, config)
    segments = sorted(log_dir.glob("*.log"))
    assert len(segments) == 4
    segments[0].with_suffix(".index").unlink()
    segments[1].with_suffix(".timeindex").unlink()
    segments[2].with_suffix(".index").write_bytes(b"\xff" * 13)
    segments[3].with_suffix(".index").unlink(missing_ok=True)  # active: may not be written yet
    log = reopen(log_dir, config)
    assert log.log_end_offset == 200
    assert read_all(log) == expected_records(range(20))
    for i in (0, 55, 101, 199):
        first = _core.decode_batches(log.read(i, max_bytes=1))[0][0]
        assert first == i - i % 10
    assert log.offset_for_timestamp(1_700_000_000_000 + 12) == (120, 1_700_000_000_012)
    for seg in segments:
        assert seg.with_suffix(".index").stat().st_size > 0
        assert seg.with_suffix(".timeindex").exists()


def test_damage_in_an_older_segment_drops_later_segments(log_dir: Path) -> None:
    size = len(batch_for(0))
    config = {"segment.bytes": size * 5}
    write_then_crash(log_dir, 20, config)
    first = sorted(log_dir.glob("*.log"))[0]
    cut = batches_in(first)[3]
    with first.open("r+b") as f:
        f.truncate(cut.position + 20)
    log = reopen(log_dir, config)
    assert log.log_end_offset == 30
    assert read_all(log) == expected_records(range(3))
    assert log.segment_base_offsets == [0]


def test_clean_close_then_lost_tail_is_still_detected(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        for i in range(10):
            log.append(batch_for(i))
    log_file = log_dir / f"{SEGMENT}.log"
    last = batches_in(log_file)[-1]
    with log_file.open("r+b") as f:
        f.truncate(last.position + 30)
    log = reopen(log_dir)
    assert log.log_end_offset == 90
    assert read_all(log) == expected_records(range(9))
