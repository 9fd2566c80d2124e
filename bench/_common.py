"""Helpers shared by the bench scripts: medians and scratch dirs here; fio, iperf3 and the
page-cache warm-up are the benchmark harness's (kafkalite.bench.limits)."""

from __future__ import annotations

import shutil
import socket
import statistics
from collections.abc import Sequence
from pathlib import Path

from kafkalite.bench import limits
from kafkalite.bench.limits import warm_page_cache

__all__ = ["fio_seq_write_mb_s", "iperf3_loopback_mb_s", "median", "scratch_dir", "warm_page_cache"]

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


def fio_seq_write_mb_s(
    directory: Path, size_bytes: int, direct: bool = False, block_bytes: int = MIB
) -> float:
    """fio's sequential write MiB/s into a new file in `directory` (see limits.fio_seq_write)."""
    return limits.fio_seq_write(directory, size_bytes, direct, block_bytes=block_bytes)["mb_s"]


def iperf3_loopback_mb_s(size_bytes: int, zerocopy: bool) -> float:
    """iperf3 sending `size_bytes` over loopback, optionally with -Z (sendfile)."""
    return limits.iperf3(zerocopy=zerocopy, size_bytes=size_bytes)["mb_s"]


def kernel_has_tls() -> bool:
    """Whether the kernel takes the `tls` upper-layer protocol on a TCP socket, as the
    broker checks before handing TLS sessions to the kernel (kTLS)."""
    tcp_ulp = 31  # linux/tcp.h; Python's socket module has no name for it
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()) as client:
            try:
                client.setsockopt(socket.IPPROTO_TCP, tcp_ulp, b"tls")
            except OSError:
                return False
    return True


def tls_fetch_path() -> str:
    """How a kafkalite broker with default settings sends Fetch bytes over TLS here."""
    if kernel_has_tls():
        return "kTLS: sendfile (AES-GCM / ChaCha20-Poly1305 suites)"
    return "user-space rustls (no kTLS: the kernel has no tls module)"
