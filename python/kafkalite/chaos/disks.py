"""One FUSE disk per broker of a ``Cluster``, so power can be cut on one broker at a time.

Broker ``i``'s log dir is ``ROOT/broker-i/logs``, a ``FuseMount`` over
``ROOT/broker-i/platter``: what the broker has not fsynced lives only in that mount's
process, and ``power_cut(i)`` drops it (the broker must be dead first). Give
``overrides()`` to ``Cluster(broker_overrides=...)``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kafkalite.chaos.fusemount import FuseMount


class BrokerDisks:
    def __init__(self, root: Path, broker_ids: Iterable[int]) -> None:
        dirs = {i: Path(root) / f"broker-{i}" for i in broker_ids}
        self.mounts = {i: FuseMount(d / "platter", d / "logs") for i, d in dirs.items()}

    available = staticmethod(FuseMount.available)

    def overrides(self) -> dict[int, dict[str, object]]:
        return {i: {"log.dirs": str(m.mountpoint)} for i, m in self.mounts.items()}

    def power_cut(self, broker_id: int) -> int:
        """Cut the power; returns how many bytes the broker's files lost (their sizes
        through the mount before, which count unsynced writes, minus after)."""
        mount = self.mounts[broker_id]
        before = _bytes(mount.mountpoint)
        mount.power_cut()
        return before - _bytes(mount.mountpoint)

    @property
    def power_cuts(self) -> int:
        return sum(m.power_cuts for m in self.mounts.values())

    def mount(self) -> BrokerDisks:
        try:
            for m in self.mounts.values():
                m.mount()
        except BaseException:
            self.unmount()
            raise
        return self

    def unmount(self) -> None:
        for m in self.mounts.values():
            m.unmount()

    def __enter__(self) -> BrokerDisks:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.unmount()


def _bytes(directory: Path) -> int:
    total = 0
    for f in directory.rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_size
        except OSError:  # gone meanwhile
            pass
    return total
