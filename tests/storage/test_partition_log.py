from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from kafkalite import _core, errors
from tests.storage.conftest import batch_for, batches_in, expected_records, read_all


def test_offsets_are_dense_and_assigned_by_the_log(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        infos = [log.append(batch_for(i)) for i in range(5)]
        assert [(i.first_offset, i.last_offset) for i in infos] == [
            (i * 10, i * 10 + 9) for i in range(5)
        ]
        assert log.log_start_offset == 0
        assert log.log_end_offset == 50
        assert read_all(log) == expected_records(range(5))


def test_writable_buffer_gets_offsets_in_place(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        log.append(batch_for(0))
        buf = bytearray(batch_for(1))
        log.append(buf)
        assert int.from_bytes(buf[:8], "big") == 10


def test_read_mid_batch_returns_the_whole_batch(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        for i in range(3):
            log.append(batch_for(i))
        chunk = log.read(15, max_bytes=1)
        offsets = [r[0] for r in _core.decode_batches(chunk)]
        assert offsets == list(range(10, 20)), "first batch is whole even past max_bytes"
        assert log.read(30) == b"", "the log end reads as empty"


def test_read_respects_max_bytes_and_max_offset(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, {"index.interval.bytes": 0}) as log:
        for i in range(20):
            log.append(batch_for(i))
        size = len(batch_for(0))
        chunk = log.read(0, max_bytes=size * 3 + 5)
        assert len(chunk) == size * 3
        chunk = log.read(0, max_bytes=1 << 20, max_offset=45)
        assert [r[0] for r in _core.decode_batches(chunk)][-1] == 49  # batch 40..49 starts < 45
        assert log.read(0, max_bytes=1 << 20, max_offset=0) == b""


def test_offset_out_of_range_is_a_typed_kafka_error(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        log.append(batch_for(0))
        with pytest.raises(errors.OffsetOutOfRangeError) as info:
            log.read(11)
        assert info.value.error_code == 1
        assert isinstance(info.value, errors.KafkaliteError)


def test_bad_input_gets_clear_errors_and_the_log_stays_usable(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, {"max.message.bytes": 2000}) as log:
        good = bytearray(batch_for(0))
        flipped = bytearray(good)
        flipped[-1] ^= 0xFF
        with pytest.raises(errors.CorruptRecordError) as info:
            log.append(flipped)
        assert info.value.error_code == 2
        with pytest.raises(errors.CorruptRecordError):
            log.append(good[:-3])
        with pytest.raises(errors.CorruptRecordError):
            log.append(b"\x00" * 7)
        big = _core.build_batch([(b"k", b"v" * 5000)])
        with pytest.raises(errors.MessageTooLargeError) as too_big:
            log.append(big)
        assert too_big.value.error_code == 10
        assert log.append(good).first_offset == 0
        assert log.log_end_offset == 10


def test_invalid_config_names_key_and_value(log_dir: Path) -> None:
    with pytest.raises(
        errors.InvalidConfigError, match=r"Invalid value soon for configuration retention\.ms"
    ):
        _core.PartitionLog(log_dir, {"retention.ms": "soon"})


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_stored_as_received(log_dir: Path, codec: str) -> None:
    recs = [(b"key", b"value-%d" % i, 1000 + i, [("h", b"v")]) for i in range(100)]
    batch = _core.build_batch(recs, compression=codec)
    with _core.PartitionLog(log_dir) as log:
        log.append(batch)
        stored = log.read(0)
        assert stored[8:] == batch[8:]
        decoded = _core.decode_batches(stored)
        assert [(o, ts, k, v, h) for o, ts, k, v, h in decoded] == [
            (i, 1000 + i, b"key", b"value-%d" % i, [("h", b"v")]) for i in range(100)
        ]


def test_segments_roll_on_segment_bytes_and_reads_cross_them(log_dir: Path) -> None:
    size = len(batch_for(0))
    with _core.PartitionLog(log_dir, {"segment.bytes": size * 4}) as log:
        for i in range(10):
            log.append(batch_for(i))
        assert log.segment_base_offsets == [0, 40, 80]
        assert read_all(log) == expected_records(range(10))
    names = sorted(p.name for p in log_dir.iterdir() if p.suffix == ".log")
    assert names == [f"{b:020d}.log" for b in (0, 40, 80)]


def test_timestamp_lookup(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, {"index.interval.bytes": 0, "segment.bytes": 5000}) as log:
        for i in range(20):
            recs = [(None, b"v", 10_000 + i * 100 + j) for j in range(10)]
            log.append(_core.build_batch(recs))
        assert log.offset_for_timestamp(0) == (0, 10_000)
        assert log.offset_for_timestamp(10_505) == (55, 10_505)
        assert log.offset_for_timestamp(10_509) == (59, 10_509)
        assert log.offset_for_timestamp(10_510) == (60, 10_600)
        assert log.offset_for_timestamp(12_000) is None
        assert log.max_timestamp_offset() == (199, 11_909)


def test_log_append_time(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, {"message.timestamp.type": "LogAppendTime"}) as log:
        info = log.append(_core.build_batch([(None, b"v", 5)]), now_ms=123_456)
        assert info.log_append_time == 123_456
        assert _core.decode_batches(log.read(0))[0][1] == 123_456


def test_truncate_to_removes_tail_and_appends_continue(log_dir: Path) -> None:
    size = len(batch_for(0))
    with _core.PartitionLog(log_dir, {"segment.bytes": size * 3}) as log:
        for i in range(10):
            log.append(batch_for(i))
        log.truncate_to(40)
        assert log.log_end_offset == 40
        assert read_all(log) == expected_records(range(4))
        log.truncate_to(35)  # mid-batch: the straddling batch goes too
        assert log.log_end_offset == 30
        assert log.append(batch_for(3)).first_offset == 30
        assert read_all(log) == expected_records(range(4))
        log.truncate_fully_and_start_at(1000)
        assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
        assert log.append(batch_for(0)).first_offset == 1000


def test_retention_by_size_keeps_active_segment(log_dir: Path) -> None:
    size = len(batch_for(0))
    config = {"segment.bytes": size * 2, "retention.bytes": size * 3, "retention.ms": -1}
    with _core.PartitionLog(log_dir, config) as log:
        for i in range(10):
            log.append(batch_for(i))
        assert len(log.segment_base_offsets) == 5
        deleted = log.apply_retention()
        assert deleted == 3
        assert log.segment_base_offsets == [60, 80]
        assert log.log_start_offset == 60
        with pytest.raises(errors.OffsetOutOfRangeError):
            log.read(0)
        assert read_all(log, 60) == expected_records(range(6, 10))


def test_retention_by_time_deletes_the_expired_active_segment_as_kafka_does(
    log_dir: Path,
) -> None:
    size = len(batch_for(0))
    with _core.PartitionLog(log_dir, {"segment.bytes": size, "retention.ms": 1000}) as log:
        for i in range(3):
            log.append(batch_for(i))  # timestamps 1_700_000_000_000 + i
        # Not yet expired: nothing goes, the active segment stays where it is.
        assert log.apply_retention(now_ms=1_700_000_000_500) == 0
        far_future = 1_800_000_000_000
        assert log.apply_retention(now_ms=far_future) == 3
        assert log.segment_base_offsets == [30]
        assert (log.log_start_offset, log.log_end_offset) == (30, 30)
        assert log.apply_retention(now_ms=far_future) == 0
        log.append(batch_for(3))
        assert read_all(log, 30) == expected_records([3])


def test_close_then_reopen_keeps_everything(log_dir: Path) -> None:
    size = len(batch_for(0))
    with _core.PartitionLog(log_dir, {"segment.bytes": size * 3}) as log:
        for i in range(10):
            log.append(batch_for(i))
    assert (log_dir / ".kafkalite-clean-shutdown").exists()
    with pytest.raises(errors.KafkaStorageError):
        log.read(0)
    with _core.PartitionLog(log_dir, {"segment.bytes": size * 3}) as log:
        assert not (log_dir / ".kafkalite-clean-shutdown").exists()
        assert log.log_end_offset == 100
        assert read_all(log) == expected_records(range(10))
        assert log.append(batch_for(10)).first_offset == 100


def test_read_slice_sendfile_to_socket(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir) as log:
        for i in range(50):
            log.append(batch_for(i))
        sl = log.read_slice(0, max_bytes=1 << 30)
        assert sl is not None and sl.first_offset == 0
        expected = sl.read()
        a, b = socket.socketpair()
        received = bytearray()

        def drain() -> None:
            while len(received) < len(expected):
                chunk = b.recv(65536)
                if not chunk:
                    break
                received.extend(chunk)

        reader = threading.Thread(target=drain)
        reader.start()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        assert sl.send_all(a.fileno()) == len(expected)
        reader.join(10)
        a.close()
        b.close()
        assert bytes(received) == expected
        assert sum(x.size for x in batches_in(log_dir / f"{0:020d}.log")) == len(expected)


def test_io_engine_is_named() -> None:
    assert _core.io_engine() in ("io_uring", "pwritev")


@pytest.mark.parametrize("writable", [True, False])
def test_large_corrupt_batch_is_cut_back_off_the_file(log_dir: Path, writable: bool) -> None:
    """Big appends verify CRCs while the bytes are being written: a failure must leave the
    file as it was and the next append must continue at the same place."""
    big = _core.build_batch([(None, bytes([i % 256]) * 1024) for i in range(400)])
    assert len(big) > 256 << 10
    with _core.PartitionLog(log_dir, {"max.message.bytes": 1 << 20}) as log:
        log.append(bytearray(big))
        size = log.size_bytes
        bad = bytearray(big)
        bad[len(bad) // 2] ^= 0x10
        with pytest.raises(errors.CorruptRecordError):
            log.append(bad if writable else bytes(bad))
        assert log.size_bytes == size
        assert (log_dir / f"{0:020d}.log").stat().st_size == size
        assert log.append(big).first_offset == 400
        assert [r[0] for r in _core.decode_batches(log.read(400))][:1] == [400]


def test_a_second_open_of_one_dir_fails_until_the_first_closes(log_dir: Path) -> None:
    first = _core.PartitionLog(log_dir)
    first.append(batch_for(0))
    with pytest.raises(errors.LogDirInUseError, match=f"log dir {log_dir} is in use") as info:
        _core.PartitionLog(log_dir)
    assert isinstance(info.value, errors.KafkaStorageError) and isinstance(info.value, OSError)
    assert info.value.error_code == 56
    first.close()
    with _core.PartitionLog(log_dir) as again:
        assert again.log_end_offset == 10
