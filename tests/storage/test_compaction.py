"""Log compaction through the binding: the latest value per key survives at its original
offset, tombstones go after delete.retention.ms, keyless records are refused, and a pass
runs beside appends and reads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kafkalite import _core, errors
from tests.storage.conftest import read_all

T0 = 1_700_000_000_000
Entry = tuple[int, bytes | None, bytes | None]


def compacted(**extra: object) -> dict[str, object]:
    config: dict[str, object] = {
        "cleanup.policy": "compact",
        "segment.bytes": 16384,
        "delete.retention.ms": 0,
    }
    config.update({k.replace("_", "."): v for k, v in extra.items()})
    return config


def write_versions(
    log: _core.PartitionLog,
    keys: int = 1000,
    versions: int = 10,
    tombstones: int = 100,
    per_batch: int = 100,
    compression: str = "none",
) -> list[Entry]:
    """`versions` values for each of `keys` keys, then tombstones for every tenth key.
    Returns every record with the offset it was given."""
    records: list[tuple[bytes, bytes | None]] = [
        (f"key-{k}".encode(), f"value-{k}-v{v}".encode())
        for v in range(versions)
        for k in range(keys)
    ]
    records += [(f"key-{k}".encode(), None) for k in range(0, keys, keys // tombstones)][
        :tombstones
    ]
    written: list[Entry] = []
    for i in range(0, len(records), per_batch):
        chunk = records[i : i + per_batch]
        info = log.append(_core.build_batch([(k, v, T0 + i) for k, v in chunk], compression))
        written += [(info.first_offset + j, k, v) for j, (k, v) in enumerate(chunk)]
    return written


def latest(written: list[Entry], tombstones: bool) -> list[Entry]:
    by_key = {key: (offset, key, value) for offset, key, value in written}
    return sorted(e for e in by_key.values() if tombstones or e[2] is not None)


def test_latest_value_per_key_survives_at_its_offset(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, compacted()) as log:
        written = write_versions(log)
        log.roll()
        end = log.log_end_offset
        segments = len(log.segment_base_offsets)
        assert segments > 15, "small segments, many of them closed"

        first = log.compact(force=True)
        assert first.skipped is None
        assert read_all(log) == latest(written, tombstones=True)
        assert (first.records_kept, first.tombstones_removed) == (1000, 0)
        assert first.records_removed == len(written) - 1000
        assert log.log_end_offset == end
        assert log.log_start_offset == 0

        # delete.retention.ms=0: the tombstones' delete horizon passed with the first pass.
        second = log.compact(force=True)
        assert second.tombstones_removed == 100
        live = latest(written, tombstones=False)
        assert len(live) == 900
        assert read_all(log) == live
        assert log.log_end_offset == end
        assert len(log.segment_base_offsets) < segments / 5, "cleaned segments merge"
        print(f"\n1,000 keys x 10 versions: {first!r}")

    with _core.PartitionLog(log_dir, compacted()) as log:
        assert read_all(log) == live
        assert log.log_end_offset == end
        # Appends continue after the last offset, whatever compaction removed before it.
        assert log.append(_core.build_batch([(b"key-1", b"new")])).first_offset == end


def test_tombstones_stay_until_delete_retention_has_passed(log_dir: Path) -> None:
    day = 86_400_000
    with _core.PartitionLog(log_dir, compacted(delete_retention_ms=day)) as log:
        written = write_versions(log, keys=100, versions=3, tombstones=10)
        log.roll()
        now = int(time.time() * 1000)
        log.compact(now_ms=now, force=True)
        assert log.compact(now_ms=now + day // 2, force=True).tombstones_removed == 0
        assert read_all(log) == latest(written, tombstones=True)
        assert log.compact(now_ms=now + day, force=True).tombstones_removed == 10
        assert read_all(log) == latest(written, tombstones=False)


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_compressed_batches_keep_their_codec(log_dir: Path, compression: str) -> None:
    with _core.PartitionLog(log_dir, compacted()) as log:
        written = write_versions(log, keys=500, versions=4, tombstones=50, compression=compression)
        log.roll()
        stats = log.compact(force=True)
        assert stats.bytes_after < stats.bytes_before
        assert read_all(log) == latest(written, tombstones=True)
        log.compact(force=True)
        assert read_all(log) == latest(written, tombstones=False)
        codec_bits = {"gzip": 1, "zstd": 4}[compression]
        offset = 0
        while chunk := log.read(offset, max_bytes=1):
            attributes = int.from_bytes(chunk[21:23], "big")
            # A batch left empty at the end of a cleaned segment is stored uncompressed.
            if int.from_bytes(chunk[57:61], "big") > 0:
                assert attributes & 0x07 == codec_bits
            offset = int.from_bytes(chunk[:8], "big") + int.from_bytes(chunk[23:27], "big") + 1


def test_keyless_records_are_refused_on_compacted_topics(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, compacted()) as log:
        log.append(_core.build_batch([(b"k", b"v")]))
        for compression in ("none", "gzip"):
            batch = _core.build_batch([(b"k", b"v"), (None, b"no key")], compression)
            with pytest.raises(errors.InvalidRecordError) as info:
                log.append(batch)
            assert info.value.error_code == 87
        assert log.log_end_offset == 1
    with _core.PartitionLog(log_dir.with_name("plain"), {"cleanup.policy": "delete"}) as log:
        assert log.append(_core.build_batch([(None, b"no key")])).first_offset == 0


def test_compaction_config_is_validated(log_dir: Path) -> None:
    for key, value in [
        ("cleanup.policy", "shred"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("delete.retention.ms", "-5"),
        ("max.compaction.lag.ms", "0"),
    ]:
        with pytest.raises(
            errors.InvalidConfigError, match=f"Invalid value {value} for configuration {key}"
        ) as info:
            _core.PartitionLog(log_dir, {key: value})
        assert info.value.error_code == 40
    _core.PartitionLog(log_dir, {"cleanup.policy": "delete,compact"}).close()


def test_delete_policy_logs_are_not_compacted_and_compact_logs_not_aged_out(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, {"segment.bytes": 4096, "retention.ms": 1}) as log:
        write_versions(log, keys=100, versions=2, tombstones=10)
        log.roll()
        assert log.compact(force=True).skipped is not None
    with _core.PartitionLog(log_dir.with_name("c"), compacted(retention_ms=1)) as log:
        write_versions(log, keys=100, versions=2, tombstones=10)
        log.roll()
        assert log.apply_retention(now_ms=T0 + 10**9) == 0


def test_dirty_ratio_decides_unless_forced(log_dir: Path) -> None:
    with _core.PartitionLog(log_dir, compacted(min_cleanable_dirty_ratio=0.5)) as log:
        write_versions(log, keys=200, versions=5, tombstones=10)
        log.roll()
        assert log.compact().skipped is None, "all dirty: ratio 1.0"
        write_versions(log, keys=10, versions=1, tombstones=1)
        log.roll()
        low = log.compact()
        assert low.skipped is not None and low.dirty_ratio < 0.5
        assert log.compact(force=True).skipped is None


def test_compaction_runs_beside_appends_and_reads(log_dir: Path) -> None:
    """10 versions of 100k keys; appends and reads go on while the pass runs, and the
    throughput is printed (run with -s to see it)."""
    keys, versions = 100_000, 10
    with _core.PartitionLog(log_dir, compacted(segment_bytes=16 << 20)) as log:
        for v in range(versions):
            for start in range(0, keys, 1000):
                records = [
                    (f"key-{k:08d}".encode(), b"%d" % v * 50, T0)
                    for k in range(start, start + 1000)
                ]
                log.append(_core.build_batch(records))
        log.roll()
        end = log.log_end_offset
        result: dict[str, _core.CompactionStats] = {}
        worker = threading.Thread(
            target=lambda: result.setdefault("stats", log.compact(force=True))
        )
        worker.start()
        latencies: list[float] = []
        while worker.is_alive():
            started = time.perf_counter()
            log.append(_core.build_batch([(b"live-%d" % len(latencies), b"v")]))
            assert log.read(0, max_bytes=4096)
            latencies.append(time.perf_counter() - started)
        worker.join()
        stats = result["stats"]
        print(
            f"\ncompaction of {keys:,} keys x {versions} versions:"
            f" {stats.bytes_before / 1e6:.1f} MB -> {stats.bytes_after / 1e6:.1f} MB"
            f" in {stats.duration_ms:.0f} ms"
            f" = {stats.mb_per_sec:.0f} MB/s; {len(latencies)} appends+reads meanwhile,"
            f" slowest {max(latencies, default=0) * 1e3:.2f} ms"
        )
        assert stats.records_kept == keys
        assert latencies, "the binding released the GIL and the lock"
        assert max(latencies) * 1e3 < stats.duration_ms
        got = read_all(log)
        assert len(got) == keys + len(latencies)
        assert all(value == b"9" * 50 for _, _, value in got[:keys])
        assert got[keys][0] == end
