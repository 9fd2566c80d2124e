"""A FUSE file system for two disk faults the kernel here cannot make otherwise (it has no
device-mapper): power loss that drops every write not yet fsynced, and EIO from the device.

    python -m kafkalite.chaos.fusefs BACKING MOUNTPOINT

Files live in BACKING, which stands for the platter. Written data is held in this
process's memory (the page cache) until the file is fsynced (or fdatasynced), and only
then written through to BACKING. Killing this process is a power cut: what was not synced
is gone, and a new process over the same BACKING sees only what reached the platter.
Names (create, rename, unlink, mkdir) go to BACKING at once -- kinder than a real file
system, whose directory entries can be lost too, so the losses measured are a floor.

Writing ``eio`` to the control file ``/.kafkalite-fault`` makes every other read, write,
fsync and create answer EIO (a failing device); writing ``ok`` heals it.

The mount uses direct_io and zero cache timeouts, so the kernel keeps no copy of file
data or sizes that a power cut would have to reach. Needs root, /dev/fuse and libfuse2
(Debian's libfuse2 package) with fusepy.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

from fuse import FUSE, FuseOSError, Operations

from kafkalite.chaos.fusemount import CONTROL


class VolatileFS(Operations):  # type: ignore[misc]
    def __init__(self, backing: str) -> None:
        self.root = backing
        self.dirty: dict[str, bytearray] = {}  # path -> whole content, not yet synced
        self.failing = False

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _check(self, path: str) -> None:
        if self.failing and path != CONTROL:
            raise FuseOSError(errno.EIO)

    def _buf(self, path: str) -> bytearray:
        if path not in self.dirty:
            with open(self._real(path), "rb") as f:
                self.dirty[path] = bytearray(f.read())
        return self.dirty[path]

    def _os(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OSError as e:
            raise FuseOSError(e.errno or errno.EIO) from None

    # -- names and attributes --------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        if path == CONTROL:
            now = time.time()
            return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": 0,
                    "st_mtime": now, "st_atime": now, "st_ctime": now}  # fmt: skip
        st = self._os(os.lstat, self._real(path))
        out = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid",
                                            "st_atime", "st_mtime", "st_ctime")}  # fmt: skip
        out["st_size"] = len(self.dirty[path]) if path in self.dirty else st.st_size
        return out

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *self._os(os.listdir, self._real(path))]

    def statfs(self, path: str) -> dict[str, Any]:
        st = os.statvfs(self.root)
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")  # fmt: skip
        return {k: getattr(st, k) for k in keys}

    def mkdir(self, path: str, mode: int) -> None:
        self._check(path)
        self._os(os.mkdir, self._real(path), mode)

    def rmdir(self, path: str) -> None:
        self._os(os.rmdir, self._real(path))

    def unlink(self, path: str) -> None:
        self._os(os.unlink, self._real(path))
        self.dirty.pop(path, None)

    def rename(self, old: str, new: str) -> None:
        self._check(old)
        self._os(os.rename, self._real(old), self._real(new))
        self.dirty.pop(new, None)
        if old in self.dirty:
            self.dirty[new] = self.dirty.pop(old)
        prefix = old.rstrip("/") + "/"
        for p in [p for p in self.dirty if p.startswith(prefix)]:  # a renamed directory
            self.dirty[new.rstrip("/") + "/" + p[len(prefix) :]] = self.dirty.pop(p)

    def chmod(self, path: str, mode: int) -> None:
        self._os(os.chmod, self._real(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        self._os(os.chown, self._real(path), uid, gid)

    def utimens(self, path: str, times: tuple[float, float] | None = None) -> None:
        if path != CONTROL:
            self._os(os.utime, self._real(path), times)

    # -- data ---------------------------------------------------------------------------
    def create(self, path: str, mode: int, fi: Any = None) -> int:
        self._check(path)
        fd = self._os(os.open, self._real(path), os.O_WRONLY | os.O_CREAT, mode)
        os.close(fd)
        return 0

    def open(self, path: str, flags: int) -> int:
        if path != CONTROL:
            self._check(path)
            if not os.path.exists(self._real(path)):
                raise FuseOSError(errno.ENOENT)
            if flags & os.O_TRUNC:
                self.dirty[path] = bytearray()
        return 0

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._check(path)
        if path in self.dirty:
            return bytes(self.dirty[path][offset : offset + size])
        with open(self._real(path), "rb") as f:
            f.seek(offset)
            return f.read(size)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        if path == CONTROL:
            self.failing = data.strip() == b"eio"
            return len(data)
        self._check(path)
        buf = self._buf(path)
        if offset > len(buf):
            buf.extend(b"\0" * (offset - len(buf)))
        buf[offset : offset + len(data)] = data
        return len(data)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        if path == CONTROL:
            return
        self._check(path)
        buf = self._buf(path)
        if length < len(buf):
            del buf[length:]
        else:
            buf.extend(b"\0" * (length - len(buf)))

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        self._check(path)
        buf = self.dirty.pop(path, None)
        if buf is None:
            return
        with open(self._real(path), "r+b") as f:
            f.write(buf)
            f.truncate(len(buf))
            f.flush()
            os.fsync(f.fileno())

    def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
        self._check(path)

    def flush(self, path: str, fh: int) -> None:
        pass  # close(2) is not a sync: dirty data stays in memory

    def release(self, path: str, fh: int) -> None:
        pass


def main() -> None:
    backing, mountpoint = sys.argv[1], sys.argv[2]
    Path(backing).mkdir(parents=True, exist_ok=True)
    FUSE(
        VolatileFS(backing),
        mountpoint,
        foreground=True,
        nothreads=True,
        direct_io=True,
        attr_timeout=0,
        entry_timeout=0,
        negative_timeout=0,
    )


if __name__ == "__main__":
    main()
