from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkalite import _core


def batch_for(i: int, records: int = 10, value_bytes: int = 100) -> bytes:
    """Batch number i: deterministic keys and values so a reader can check every byte."""
    recs = [
        (f"k{i:03d}-{j}".encode(), bytes([i % 251]) * value_bytes, 1_700_000_000_000 + i)
        for j in range(records)
    ]
    return _core.build_batch(recs)


@dataclass
class BatchOnDisk:
    position: int
    size: int
    base_offset: int


def batches_in(log_file: Path) -> list[BatchOnDisk]:
    data = log_file.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        out.append(BatchOnDisk(pos, size, int.from_bytes(data[pos : pos + 8], "big")))
        pos += size
    return out


def write_then_crash(log_dir: Path, count: int, config: dict[str, object]) -> list[int]:
    """Append `count` batches in a child process that then dies without closing the log:
    the page cache keeps the bytes, as after a broker crash. Returns each batch's base."""
    script = textwrap.dedent(
        f"""
        import json, os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent.parent)!r})
        from kafkalite import _core
        from tests.storage.conftest import batch_for
        log = _core.PartitionLog({str(log_dir)!r}, json.loads({json.dumps(json.dumps(config))}))
        bases = [log.append(bytearray(batch_for(i))).first_offset for i in range({count})]
        print(json.dumps(bases), flush=True)
        os._exit(0)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def read_all(
    log: _core.PartitionLog, start: int = 0
) -> list[tuple[int, bytes | None, bytes | None]]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = start
    while offset < log.log_end_offset:
        chunk = log.read(offset, max_bytes=1 << 20)
        if not chunk:
            break
        recs = [(o, k, v) for o, _ts, k, v, _h in _core.decode_batches(chunk) if o >= offset]
        out.extend(recs)
        # Continue after the last batch, not the last record: compaction leaves emptied
        # batches where every record went, as a Kafka consumer expects.
        offset = max(offset, batches_end(chunk))
    return out


def batches_end(chunk: bytes) -> int:
    """The offset after the last whole batch in `chunk`."""
    end, pos = 0, 0
    while pos + 61 <= len(chunk):
        base = int.from_bytes(chunk[pos : pos + 8], "big")
        length = int.from_bytes(chunk[pos + 8 : pos + 12], "big")
        if pos + 12 + length > len(chunk):
            break
        end = base + int.from_bytes(chunk[pos + 23 : pos + 27], "big") + 1
        pos += 12 + length
    return end


def expected_records(batches: range, records: int = 10) -> list[tuple[int, bytes, bytes]]:
    out = []
    for i in batches:
        for j in range(records):
            out.append((i * records + j, f"k{i:03d}-{j}".encode(), bytes([i % 251]) * 100))
    return out


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"
