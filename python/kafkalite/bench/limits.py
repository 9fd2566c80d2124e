"""The machine's own limits, measured in the same run as the brokers: fio sequential
writes on the data directory's filesystem and iperf3 over the path clients use.

Every broker figure is also reported as a fraction of these, so "fast" means "close to
what this machine can do", not a number from another machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from kafkalite.bench.systems import free_port

MIB = 1 << 20


class ToolMissing(RuntimeError):
    pass


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolMissing(
            f"{tool} is not installed (apt-get install {tool}); it measures the limit"
        )
    return path


def fio_seq_write(
    directory: Path,
    size_bytes: int,
    direct: bool = False,
    runtime_s: float | None = None,
    wrap: list[str] | None = None,
    block_bytes: int = MIB,
) -> dict:
    """Sequential writes of `block_bytes` per call into a new file (buffered unless
    `direct`, no fsync: the regime of a log append without flush), bounded by size and,
    if given, by time. fio reserves the file's blocks first (fallocate=native), as the log
    reserves blocks ahead of its appends."""
    require("fio")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "fio-seq-write.dat"
    cmd = [
        *(wrap or []),
        "fio",
        "--name=seqwrite",
        "--rw=write",
        f"--bs={block_bytes}",
        f"--size={size_bytes}",
        *([f"--runtime={runtime_s:g}"] if runtime_s is not None else []),
        "--ioengine=psync",
        f"--direct={1 if direct else 0}",
        "--end_fsync=0",
        "--fallocate=native",
        f"--filename={target}",
        "--output-format=json",
    ]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300).stdout
    finally:
        target.unlink(missing_ok=True)
    job = json.loads(out[out.index("{") :])["jobs"][0]["write"]
    return {
        "tool": "fio",
        "mode": "direct" if direct else "buffered",
        "mb_s": job["bw_bytes"] / MIB,
        "iops": job["iops"],
        "bytes": job["io_bytes"],
        "directory": str(directory),
    }


def iperf3(
    host: str = "127.0.0.1",
    seconds: float = 3,
    zerocopy: bool = False,
    server_wrap: list[str] | None = None,
    client_wrap: list[str] | None = None,
    size_bytes: int | None = None,
) -> dict:
    """iperf3 client -> server (one TCP stream) for `seconds`, or for `size_bytes` when
    given, optionally with -Z (sendfile), the zero-copy path a broker's fetch uses."""
    require("iperf3")
    port = free_port()
    server = subprocess.Popen(
        [*(server_wrap or []), "iperf3", "-s", "-1", "-p", str(port), "-B", host],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    result: dict = {}
    done = None
    try:
        cmd = [
            *(client_wrap or []),
            "iperf3",
            "-c",
            host,
            "-p",
            str(port),
            *(["-n", str(size_bytes)] if size_bytes is not None else ["-t", f"{seconds:g}"]),
            "-J",
        ]
        if zerocopy:
            cmd.append("-Z")
        # Retry until the server listens (a probe would use up its single client).
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 300)
            result = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
            if "sum_received" in result.get("end", {}):
                break
            time.sleep(0.1)
        if "sum_received" not in result.get("end", {}):
            tail = (done.stdout[-300:] + done.stderr[-300:]) if done else ""
            raise RuntimeError(f"iperf3 failed: {tail}")
    finally:
        server.kill()
        server.wait()
    bps = result["end"]["sum_received"]["bits_per_second"]
    return {
        "tool": "iperf3",
        "mode": "zerocopy" if zerocopy else "plain",
        "mb_s": bps / 8 / MIB,
        "host": host,
    }


def warm_page_cache(directory: Path, size_bytes: int) -> None:
    """Touch `size_bytes` of page cache and free it. On VMs that hand freed memory back to
    the host, the first touch runs several times slower than reuse, so without this the
    first system measured pays for the others."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "warmup.dat"
    block = b"\0" * (8 * MIB)
    try:
        with path.open("wb") as f:
            for _ in range(size_bytes // len(block)):
                f.write(block)
    finally:
        path.unlink(missing_ok=True)


def measure_limits(
    data_dir: Path,
    quick: bool,
    host: str = "127.0.0.1",
    server_wrap: list[str] | None = None,
    disk_wrap: list[str] | None = None,
) -> list[dict]:
    size = (1 << 30) if quick else (4 << 30)
    runtime = 6 if quick else 20
    net_s = 3 if quick else 10
    out = []
    for direct in (False, True):
        out.append(fio_seq_write(data_dir, size, direct, runtime, disk_wrap))
    for zc in (False, True):
        out.append(iperf3(host, net_s, zc, server_wrap))
    return out
