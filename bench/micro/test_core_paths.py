"""CRC32C, batch validation, append and index lookup in the storage core, one call each.

Run: ``python -m pytest bench/micro --benchmark-only`` (add ``--benchmark-json=FILE`` to
keep the figures). Byte throughput is in each benchmark's ``extra_info``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from kafkalite import _core

RECORD_BYTES = 1024
RECORDS_PER_BATCH = 1000  # ~1 MiB batches, as a producer with batch.size=1 MiB sends
MIB = 1 << 20


@pytest.fixture(scope="module")
def batch() -> bytes:
    value = os.urandom(RECORD_BYTES)
    return _core.build_batch([(None, value)] * RECORDS_PER_BATCH)


def test_crc32c_1mib(benchmark, batch: bytes) -> None:
    data = batch[:MIB] if len(batch) >= MIB else batch
    result = benchmark(_core.crc32c, data)
    assert isinstance(result, int)
    benchmark.extra_info["bytes"] = len(data)


def test_validate_corrupt_batch_is_rejected(benchmark, batch: bytes, tmp_path: Path) -> None:
    """Batch validation: sizes and CRC checked, then rejected before anything is written.
    A flipped last byte makes the CRC fail only after the whole batch was checked."""
    log = _core.PartitionLog(tmp_path / "v-0", {"max.message.bytes": 4 * MIB})
    bad = bytearray(batch)
    bad[-1] ^= 0xFF

    def validate() -> None:
        with pytest.raises(_core.CorruptRecordError):
            log.append(bytearray(bad))

    benchmark(validate)
    assert log.log_end_offset == 0
    benchmark.extra_info["bytes"] = len(bad)
    log.close()


def test_append_1mib_batch(benchmark, batch: bytes, tmp_path: Path) -> None:
    """Append (validation, offset assignment, write to page cache; no fsync)."""
    log = _core.PartitionLog(
        tmp_path / "a-0", {"max.message.bytes": 4 * MIB, "segment.bytes": 256 * MIB}
    )
    benchmark.pedantic(lambda: log.append(bytearray(batch)), rounds=200, iterations=1)
    assert log.log_end_offset == 200 * RECORDS_PER_BATCH
    benchmark.extra_info["bytes"] = len(batch)
    benchmark.extra_info["io_engine"] = _core.io_engine()
    log.close()


@pytest.fixture(scope="module")
def filled_log(tmp_path_factory: pytest.TempPathFactory):
    """~64 MiB over several segments of small batches, so lookups go through the index."""
    path = tmp_path_factory.mktemp("idx") / "i-0"
    log = _core.PartitionLog(path, {"segment.bytes": 8 * MIB, "index.interval.bytes": 4096})
    small = _core.build_batch([(None, os.urandom(RECORD_BYTES))] * 16)
    for _ in range(64 * MIB // len(small)):
        log.append(bytearray(small))
    yield log
    log.close()


def test_index_lookup_read_slice(benchmark, filled_log) -> None:
    """Offset -> file position (segment pick + sparse index + short scan), no data copy."""
    end = filled_log.log_end_offset
    rng = random.Random(1)
    offsets = [rng.randrange(end) for _ in range(1024)]
    state = {"i": 0}

    def lookup() -> None:
        state["i"] = (state["i"] + 1) % len(offsets)
        s = filled_log.read_slice(offsets[state["i"]], max_bytes=16 * 1024)
        assert s is not None

    benchmark(lookup)


def test_time_index_lookup(benchmark, filled_log) -> None:
    ts = filled_log.max_timestamp_offset()
    assert ts is not None
    result = benchmark(filled_log.offset_for_timestamp, 0)
    assert result is not None
