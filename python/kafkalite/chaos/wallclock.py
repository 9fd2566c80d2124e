"""Stepped wall clocks for a cluster's brokers, as an NTP step moves a host's clock.

Each broker process is started with ``wallclock.c`` preloaded (built once per run with
the system's C compiler) and a file of its own holding its offset in milliseconds;
``step`` rewrites the file and the running broker sees the new CLOCK_REALTIME within
10 ms, while CLOCK_MONOTONIC (Rust's ``Instant``, Python's ``time.monotonic``) keeps
running untouched. ZooKeeper, clients and the other brokers keep the real clock.

``WallClocks.available()`` says why it cannot run here (no C compiler)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

SOURCE = Path(__file__).with_name("wallclock.c")
# How often the preload reads its file again (wallclock.c), in seconds.
REFRESH_S = 0.010
LIBRARY = "libkafkalite-wallclock.so"


class WallClocks:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.library = self.directory / LIBRARY
        self.offsets_ms: dict[int, int] = {}

    @staticmethod
    def available() -> str | None:
        """None if the preload can be built here, else the reason it cannot."""
        if shutil.which("cc") is None:
            return "no C compiler (cc) to build the wall-clock preload: apt-get install gcc"
        return None

    def build(self) -> WallClocks:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.library.exists():
            subprocess.run(
                ["cc", "-shared", "-fPIC", "-O2", "-o", str(self.library), str(SOURCE), "-ldl"],
                check=True,
                capture_output=True,
            )
        return self

    def file(self, broker_id: int) -> Path:
        return self.directory / f"broker-{broker_id}.offset-ms"

    def env(self, broker_id: int) -> dict[str, str]:
        """For ``Cluster(broker_env=...)``: the preload and this broker's offset file
        (written now with its current offset, so a restarted broker keeps it)."""
        self._write(broker_id, self.offsets_ms.get(broker_id, 0))
        preload = " ".join(p for p in (os.environ.get("LD_PRELOAD"), str(self.library)) if p)
        return {"LD_PRELOAD": preload, "KAFKALITE_WALLCLOCK_FILE": str(self.file(broker_id))}

    def step(self, broker_id: int, delta_ms: int) -> int:
        """Move the broker's wall clock by ``delta_ms``; returns its new offset once the
        broker reads it (a busy broker read the file less than REFRESH_S ago and keeps
        the old offset until REFRESH_S after that)."""
        offset = self.offsets_ms.get(broker_id, 0) + delta_ms
        self._write(broker_id, offset)
        time.sleep(REFRESH_S * 3)
        return offset

    def _write(self, broker_id: int, offset_ms: int) -> None:
        # Written aside and renamed over: the preload never reads half a number.
        tmp = self.file(broker_id).with_suffix(".tmp")
        tmp.write_text(f"{offset_ms}\n")
        tmp.replace(self.file(broker_id))
        self.offsets_ms[broker_id] = offset_ms
