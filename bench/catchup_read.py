"""Catch-up read: whole segments sent from the page cache to a loopback socket with
sendfile (the broker's fetch path), against `iperf3 -Z` (also sendfile) in the same run.

Regime: the log was just written, so its pages are in the page cache, as for a consumer
catching up on recent data; iperf3 -Z likewise sends a cached file. The receiver is a
separate process that reads into a reused buffer and discards, like iperf3's server.

The last stdout line is JSON: mb_per_s, limit_mb_per_s, ratio_to_net_limit, ...
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from _common import GIB, MIB, iperf3_loopback_mb_s, median, scratch_dir

RECEIVER = """
import socket, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
buf = bytearray(4 << 20); total = 0
while True:
    n = conn.recv_into(buf)
    if not n:
        break
    total += n
print(total, flush=True)
"""


def build_log(log_dir: Path, total_bytes: int):  # type: ignore[no-untyped-def]
    from kafkalite import _core

    value = os.urandom(1024)
    batch = bytearray(_core.build_batch([(None, value)] * 1000))
    log = _core.PartitionLog(log_dir, {"max.message.bytes": 4 * MIB, "segment.bytes": 256 * MIB})
    for _ in range(max(1, total_bytes // len(batch))):
        log.append(batch)
    return log


def send_log_once(log) -> float:  # type: ignore[no-untyped-def]
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    assert receiver.stdout is not None
    port = int(receiver.stdout.readline())
    sock = socket.create_connection(("127.0.0.1", port))
    sent = 0
    started = time.perf_counter()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        # One fetch-sized slice at a time, as a consumer with fetch.max.bytes=64 MiB would.
        sl = log.read_slice(offset, 64 * MIB)
        if sl is None:
            break
        sent += sl.send_all(sock.fileno())
        offset = _last_offset_in(sl) + 1
    sock.shutdown(socket.SHUT_WR)
    received = int(receiver.stdout.readline())
    elapsed = time.perf_counter() - started
    sock.close()
    receiver.wait()
    if received != sent:
        raise SystemExit(f"receiver got {received} bytes of {sent}")
    return sent / MIB / elapsed


def _last_offset_in(sl) -> int:  # type: ignore[no-untyped-def]
    """Base offset + lastOffsetDelta of the last batch of a slice, walking batch headers."""
    fd = sl.fileno()
    pos, end, last = sl.position, sl.position + sl.length, sl.first_offset
    while pos < end:
        head = os.pread(fd, 27, pos)
        base = int.from_bytes(head[0:8], "big")
        size = 12 + int.from_bytes(head[8:12], "big")
        last = base + int.from_bytes(head[23:27], "big")
        pos += size
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 GiB log, 3 runs")
    parser.add_argument("--gib", type=float, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    gib = args.gib or (1.0 if args.quick else 2.0)
    runs = args.runs or (3 if args.quick else 5)
    total = int(gib * GIB)
    log = build_log(scratch_dir("catchup", args.dir) / "topic-0", total)
    results: dict[str, list[float]] = {"sendfile": [], "iperf3_z": [], "iperf3": []}
    for run in range(runs):
        results["sendfile"].append(send_log_once(log))
        results["iperf3_z"].append(iperf3_loopback_mb_s(total, zerocopy=True))
        results["iperf3"].append(iperf3_loopback_mb_s(total, zerocopy=False))
        print(
            f"run {run + 1}/{runs}: kafkalite sendfile {results['sendfile'][-1]:.0f} MB/s, "
            f"iperf3 -Z {results['iperf3_z'][-1]:.0f} MB/s, "
            f"iperf3 {results['iperf3'][-1]:.0f} MB/s",
            file=sys.stderr,
        )
    log.close()
    ours, limit = median(results["sendfile"]), median(results["iperf3_z"])
    print(
        json.dumps(
            {
                "mb_per_s": round(ours, 1),
                "limit_mb_per_s": round(limit, 1),
                "ratio_to_net_limit": round(ours / limit, 3),
                "iperf3_plain_mb_per_s": round(median(results["iperf3"]), 1),
                "gib_per_run": gib,
                "runs": runs,
                "regime": "segments in page cache, loopback TCP, receiver discards",
                "units": "MiB/s, median of runs",
            }
        )
    )


if __name__ == "__main__":
    main()
