"""Cutting one broker off the network, on one machine, without touching anyone else.

Every broker of a ``Cluster`` runs in its own cgroup (v2); an nftables rule dropping every
packet sent by a socket of that cgroup isolates the broker completely: its ZooKeeper
session starves, followers get no answers from it, and its own fetches and answers to
clients go nowhere. Loopback addresses alone could not do this, since a process's
outgoing connections all leave from 127.0.0.1. Needs root, cgroup v2 and ``nft``
(Debian's nftables package); ``restore()`` runs on every exit path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# nft resolves `socket cgroupv2` paths under this directory.
NFT_CGROUP_ROOT = Path("/sys/fs/cgroup")


class NetCutUnavailable(RuntimeError):
    """No cgroup v2, no nft, or not root: the network fault cannot be injected here."""


def cgroup2_mount() -> Path:
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    raise NetCutUnavailable("no cgroup v2 hierarchy is mounted")


class NetCut:
    """``wrap(broker_id)`` is the command prefix that starts a broker in its cgroup;
    ``isolate(broker_id)`` / ``restore()`` add and remove the drop rule."""

    def __init__(self, name: str | None = None) -> None:
        if os.geteuid() != 0:
            raise NetCutUnavailable("cutting a broker's network needs root")
        if shutil.which("nft") is None:
            raise NetCutUnavailable("nft is missing: apt-get install nftables")
        self.mount = cgroup2_mount()
        try:
            self.mount.relative_to(NFT_CGROUP_ROOT)
        except ValueError:
            raise NetCutUnavailable(
                f"cgroup v2 at {self.mount}, not under {NFT_CGROUP_ROOT}"
            ) from None
        self.name = name or f"kafkalite_chaos_{os.getpid()}"
        self.table = self.name.replace("-", "_")
        self._dirs: dict[int, Path] = {}
        self.isolated: int | None = None

    def cgroup(self, broker_id: int) -> Path:
        if broker_id not in self._dirs:
            d = self.mount / f"{self.name}-b{broker_id}"
            d.mkdir(exist_ok=True)
            self._dirs[broker_id] = d
        return self._dirs[broker_id]

    def wrap(self, broker_id: int) -> list[str]:
        """Put the process in its cgroup, then exec the broker (same pid), so every socket
        it opens belongs to the cgroup."""
        procs = self.cgroup(broker_id) / "cgroup.procs"
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs)]

    def isolate(self, broker_id: int) -> None:
        self.restore()
        d = self.cgroup(broker_id)
        rel = d.relative_to(NFT_CGROUP_ROOT)
        level = len(d.relative_to(self.mount).parts)
        rules = (
            f"table inet {self.table} {{\n"
            "  chain out {\n"
            "    type filter hook output priority 0;\n"
            f'    socket cgroupv2 level {level} "{rel}" drop\n'
            "  }\n"
            "}\n"
        )
        done = subprocess.run(["nft", "-f", "-"], input=rules, text=True, capture_output=True)
        if done.returncode != 0:
            raise NetCutUnavailable(f"nft refused the rule: {done.stderr.strip()}")
        self.isolated = broker_id

    def restore(self) -> None:
        """Remove the rule (if any): the link is whole again."""
        subprocess.run(
            ["nft", "delete", "table", "inet", self.table], capture_output=True, check=False
        )
        self.isolated = None

    def close(self) -> None:
        """Restore the link and remove the cgroups (empty once the brokers are gone)."""
        self.restore()
        for d in self._dirs.values():
            try:
                d.rmdir()
            except OSError:
                pass
        self._dirs.clear()
