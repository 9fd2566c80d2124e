"""Running ``kafkalite.chaos.fusefs`` for a fault: mount, power cut, EIO on and off, unmount.

``FuseMount.available()`` says why it cannot run here (not root, no /dev/fuse, no
libfuse2/fusepy), so a caller reports the fault as not injected instead of passing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# Written to by FuseMount.fail, read by the file system (fusefs imports it from here, so
# this module loads without fusepy).
CONTROL = "/.kafkalite-fault"


class FuseUnavailable(RuntimeError):
    pass


def _mounted(path: Path) -> bool:
    with open("/proc/mounts") as f:
        return any(line.split()[1] == str(path) for line in f if len(line.split()) > 1)


class FuseMount:
    def __init__(self, backing: Path, mountpoint: Path) -> None:
        self.backing, self.mountpoint = Path(backing), Path(mountpoint)
        self.proc: subprocess.Popen[bytes] | None = None
        self.power_cuts = 0

    @staticmethod
    def available() -> str | None:
        """None if a FUSE layer can be mounted here, else the reason it cannot."""
        if os.geteuid() != 0:
            return "mounting FUSE needs root"
        if not Path("/dev/fuse").exists():
            return "no /dev/fuse (the kernel has no FUSE)"
        try:
            import fuse  # noqa: F401 -- fusepy loads libfuse.so.2 on import
        except (ImportError, OSError) as e:
            return f"fusepy or libfuse2 missing ({e}): pip install fusepy; apt-get install libfuse2"
        return None

    def mount(self) -> FuseMount:
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        log = open(self.backing.parent / "fusefs.log", "ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kafkalite.chaos.fusefs",
                str(self.backing),
                str(self.mountpoint),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not _mounted(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise FuseUnavailable(f"the FUSE layer did not mount at {self.mountpoint}")
            time.sleep(0.05)
        return self

    def unmount(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        if _mounted(self.mountpoint):
            subprocess.run(["umount", "-l", str(self.mountpoint)], check=False)

    def power_cut(self) -> None:
        """Everything written and not fsynced is lost: the process holding it dies. The
        caller must have killed the broker first (its files are on this mount)."""
        self.unmount()
        self.power_cuts += 1
        self.mount()

    def fail(self, failing: bool) -> None:
        (self.mountpoint / CONTROL.lstrip("/")).write_bytes(b"eio" if failing else b"ok")

    def __enter__(self) -> FuseMount:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.unmount()
