"""Helpers shared by the bench scripts: medians, fio and iperf3 runs, scratch dirs."""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRATCH = REPO / "bench" / "scratch"
MIB = 1 << 20
GIB = 1 << 30


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def scratch_dir(name: str, base: Path | None = None) -> Path:
    path = (base or SCRATCH) / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        raise SystemExit(f"{tool} is not installed (apt-get install {tool}); it measures the limit")


def fio_seq_write_mb_s(
    directory: Path, size_bytes: int, direct: bool = False, block_bytes: int = MIB
) -> float:
    """fio's sequential write bandwidth, `block_bytes` per call, into a new file in
    `directory` (buffered unless `direct`, no fsync: the same regime as a log append without
    flush). fio reserves the file's blocks first (its default fallocate=native), as the log
    reserves blocks ahead of its appends."""
    require("fio")
    target = directory / "fio-seq-write.dat"
    cmd = [
        "fio",
        "--name=seqwrite",
        "--rw=write",
        f"--bs={block_bytes}",
        f"--size={size_bytes}",
        "--ioengine=psync",
        f"--direct={1 if direct else 0}",
        "--end_fsync=0",
        "--fallocate=native",
        f"--filename={target}",
        "--output-format=json",
    ]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        target.unlink(missing_ok=True)
    job = json.loads(out[out.index("{") :])["jobs"][0]["write"]
    return job["bw_bytes"] / MIB


def warm_page_cache(directory: Path, size_bytes: int) -> None:
    """Touch `size_bytes` of page cache once and free it again. On these VMs the first touch
    of guest memory is several times slower than reuse, so without this the first system
    measured pays for the others."""
    path = directory / "warmup.dat"
    block = b"\0" * (8 * MIB)
    with path.open("wb") as f:
        for _ in range(size_bytes // len(block)):
            f.write(block)
    path.unlink()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def iperf3_loopback_mb_s(size_bytes: int, zerocopy: bool) -> float:
    """iperf3 client→server over loopback, optionally with -Z (sendfile)."""
    require("iperf3")
    port = free_port()
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-p", str(port), "-B", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        cmd = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-n", str(size_bytes), "-J"]
        if zerocopy:
            cmd.append("-Z")
        # Retry until the server listens: a probe connection would use up its one client.
        deadline = time.monotonic() + 10
        while True:
            done = subprocess.run(cmd, capture_output=True, text=True)
            # iperf3 -J can exit 0 with {"error": ...} when the server was not ready yet.
            result = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
            if "sum_received" in result.get("end", {}) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if "sum_received" not in result.get("end", {}):
            raise SystemExit(f"iperf3 failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    finally:
        server.kill()
        server.wait()
    summary = result["end"]["sum_received"]
    return summary["bits_per_second"] / 8 / MIB


def env_without(key: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(key, None)
    return env
