"""Hardware profiles (``hw_profiles/*.toml``): emulate a slower disk or NIC on this machine.

- Disk: cgroup v1 blkio throttling (bytes/s and IOPS, read and write) on the block device
  holding the data directory. Brokers and fio run inside the cgroup. cgroup v1 throttles
  I/O a process issues itself (O_DIRECT, reads that miss the cache); buffered writes are
  issued later by the kernel's flusher outside the cgroup and are not throttled, which is
  why fio's buffered and direct figures are both reported against the specification.
- NIC: the broker runs in its own network namespace and the clients (this process and its
  children) in a second one, joined by a veth pair shaped with tc on both ends (netem for
  one-way delay, tbf for rate). Addresses live only on that veth pair, inside namespaces
  this module creates; nothing touches the host's interfaces.

Everything applied is undone by ``teardown()``; the harness calls it in a ``finally``, and
SIGTERM is turned into KeyboardInterrupt so Ctrl-C and kill both reach it.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tomllib
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from kafkalite.bench.shipped import PROFILES, find, is_path, shipped_dir, shipped_names

# The shipped profiles (package data): `--profile NAME` resolves here, from any directory.
PROFILE_DIR: Traversable = shipped_dir(PROFILES)
BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
CLONE_NEWNET = 0x40000000
# Private addresses on the veth pair; they exist only inside our two namespaces.
NS_SUBNET = "10.213.{n}.{host}/30"


class ProfileError(ValueError):
    """A profile that cannot be loaded or applied, naming the bad value."""


@dataclass
class DiskSpec:
    write_bytes_per_s: int = 0
    read_bytes_per_s: int = 0
    write_iops: int = 0
    read_iops: int = 0


@dataclass
class NetSpec:
    rate_mbit: float = 0
    delay_ms: float = 0.0
    burst_bytes: int = 0  # 0: one 1 ms worth of rate, at least 64 KiB


@dataclass
class Profile:
    name: str
    description: str = ""
    disk: DiskSpec | None = None
    net: NetSpec | None = None
    # Set by apply():
    cgroup: Path | None = None
    network: NetNamespaces | None = None
    _applied: list[str] = field(default_factory=list)

    def apply(self, data_root: Path) -> None:
        if self.disk is not None:
            self.cgroup = apply_blkio(self.name, data_root, self.disk)
        if self.net is not None:
            self.network = NetNamespaces(self.net)
            self.network.create()
            if self.cgroup is not None:
                self.network.broker_wrap = [*cgroup_wrap(self.cgroup), *self.network.broker_wrap]
        elif self.cgroup is not None:
            self.network = None

    @property
    def broker_wrap(self) -> list[str]:
        if self.network is not None:
            return self.network.broker_wrap
        return cgroup_wrap(self.cgroup) if self.cgroup is not None else []

    @property
    def disk_wrap(self) -> list[str]:
        return cgroup_wrap(self.cgroup) if self.cgroup is not None else []

    def attach_broker(self, system: Any) -> None:
        """Nothing to do: brokers start inside the cgroup/namespace through their wrap."""

    def achieved(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Specified vs measured, from this run's fio/iperf3 rows."""
        out = []
        mib = 1 << 20
        lim = {(r["tool"], r["mode"]): r for r in rows if r.get("kind") == "limit"}
        if self.disk is not None and self.disk.write_bytes_per_s:
            spec = self.disk.write_bytes_per_s / mib
            for mode in ("direct", "buffered"):
                if ("fio", mode) in lim:
                    out.append(
                        {
                            "what": f"disk write MB/s (fio {mode})",
                            "specified": round(spec, 1),
                            "achieved": lim[("fio", mode)]["mb_s"],
                        }
                    )
        if self.net is not None and self.net.rate_mbit:
            spec = self.net.rate_mbit * 1e6 / 8 / mib
            for mode in ("plain", "zerocopy"):
                if ("iperf3", mode) in lim:
                    out.append(
                        {
                            "what": f"network MB/s (iperf3 {mode})",
                            "specified": round(spec, 1),
                            "achieved": lim[("iperf3", mode)]["mb_s"],
                        }
                    )
        if self.network is not None and self.net is not None and self.net.delay_ms:
            what = "round-trip ms (TCP handshake, 2 x one-way delay)"
            if self.network.delay_error:
                what += f"; delay NOT applied ({self.network.delay_error})"
            out.append(
                {
                    "what": what,
                    "specified": 2 * self.net.delay_ms,
                    "achieved": self.network.ping_ms(),
                }
            )
        return out

    def teardown(self) -> None:
        if self.network is not None:
            self.network.destroy()
            self.network = None
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)
            self.cgroup = None


# ---- loading -------------------------------------------------------------------------


def _positive(section: str, key: str, value: Any, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ProfileError(f"{source}: [{section}] {key} = {value!r}: must be a number >= 0")
    return value


def parse_profile(data: dict[str, Any], source: str) -> Profile:
    known = {"name", "description", "disk", "network"}
    for key in data:
        if key not in known:
            raise ProfileError(f"{source}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    prof = Profile(
        name=str(data.get("name", Path(source).stem)), description=str(data.get("description", ""))
    )
    for section, cls in (("disk", DiskSpec), ("network", NetSpec)):
        if section not in data:
            continue
        table = data[section]
        if not isinstance(table, dict):
            raise ProfileError(f"{source}: [{section}] must be a table")
        fields = cls.__dataclass_fields__
        kwargs = {}
        for key, value in table.items():
            if key not in fields:
                raise ProfileError(
                    f"{source}: unknown key {key!r} in [{section}] (known: {', '.join(fields)})"
                )
            v = _positive(section, key, value, source)
            kwargs[key] = int(v) if fields[key].type == "int" else float(v)
        spec = cls(**kwargs)
        if section == "disk":
            prof.disk = spec
        else:
            prof.net = spec
    if prof.disk is None and prof.net is None:
        raise ProfileError(f"{source}: needs a [disk] or a [network] table")
    return prof


def available_profiles(directory: Traversable = PROFILE_DIR) -> list[str]:
    return shipped_names(directory, ".toml")


def load_profile(spec: str, directory: Traversable = PROFILE_DIR) -> Profile:
    """A profile by file path, by name of a shipped one (hw_profiles/), or several joined
    by '+' (e.g. 'sata-ssd+nic-1g': the disk of one, the network of the other)."""
    parts = spec.split("+")
    if len(parts) > 1:
        loaded = [load_profile(p, directory) for p in parts]
        merged = Profile(name=spec, description=" + ".join(p.description or p.name for p in loaded))
        for p in loaded:
            if p.disk is not None:
                if merged.disk is not None:
                    raise ProfileError(f"profile {spec!r}: more than one part sets [disk]")
                merged.disk = p.disk
            if p.net is not None:
                if merged.net is not None:
                    raise ProfileError(f"profile {spec!r}: more than one part sets [network]")
                merged.net = p.net
        return merged
    path: Traversable | None = (
        Path(spec) if is_path(spec, ".toml") else find(spec, directory, ".toml")
    )
    if path is None or not path.is_file():
        names = ", ".join(available_profiles(directory)) or "none"
        raise ProfileError(f"unknown hardware profile {spec!r} (available: {names})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    return parse_profile(data, str(path))


# ---- disk: cgroup v1 blkio -------------------------------------------------------------


def block_device(path: Path) -> str:
    """'MAJ:MIN' of the whole disk holding `path` (throttling works on disks, not partitions)."""
    dev = os.stat(path).st_dev
    majmin = f"{os.major(dev)}:{os.minor(dev)}"
    sysdev = Path("/sys/dev/block") / majmin
    if not sysdev.exists():
        raise ProfileError(f"{path} is not on a block device ({majmin}); cannot throttle it")
    if (sysdev / "partition").exists():
        majmin = (sysdev.resolve().parent / "dev").read_text().strip()
    return majmin


def apply_blkio(name: str, data_root: Path, disk: DiskSpec) -> Path:
    if not (BLKIO_ROOT / "blkio.throttle.write_bps_device").exists():
        raise ProfileError(
            "cgroup v1 blkio throttling is not available here (/sys/fs/cgroup/blkio)"
        )
    dev = block_device(data_root)
    cg = BLKIO_ROOT / f"kafkalite-bench-{os.getpid()}"
    cg.mkdir(exist_ok=True)
    for knob, value in (
        ("write_bps_device", disk.write_bytes_per_s),
        ("read_bps_device", disk.read_bytes_per_s),
        ("write_iops_device", disk.write_iops),
        ("read_iops_device", disk.read_iops),
    ):
        if value:
            (cg / f"blkio.throttle.{knob}").write_text(f"{dev} {int(value)}\n")
    return cg


def cgroup_wrap(cg: Path) -> list[str]:
    """A command prefix that moves the command into the cgroup before it starts."""
    return ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh"]


def remove_cgroup(cg: Path) -> None:
    try:
        pids = (cg / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:  # survivors go back to the root group so the directory can go
        try:
            (BLKIO_ROOT / "cgroup.procs").write_text(pid + "\n")
        except OSError:
            pass
    try:
        cg.rmdir()
    except OSError:
        pass


# ---- network: two namespaces and a shaped veth pair ------------------------------------


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise ProfileError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns failed: {os.strerror(err)}")


class NetNamespaces:
    """Broker namespace <-veth-> client namespace. While it exists this process (the
    harness, its librdkafka threads and every child it starts) lives in the client one."""

    def __init__(self, spec: NetSpec) -> None:
        self.spec = spec
        tag = os.getpid() % 100_000
        self.srv = f"klb-srv-{tag}"
        self.cli = f"klb-cli-{tag}"
        self.n = tag % 250 + 1
        self.broker_host = NS_SUBNET.format(n=self.n, host=2).split("/")[0]
        self.client_host = NS_SUBNET.format(n=self.n, host=1).split("/")[0]
        self.broker_wrap = ["ip", "netns", "exec", self.srv]
        self._home_fd: int | None = None
        self.delay_error = ""

    def create(self) -> None:
        try:
            for ns in (self.srv, self.cli):
                _ip("netns", "add", ns)
                _ip("-n", ns, "link", "set", "lo", "up")
            # Created inside the client namespace, one end moved to the broker's: the host's
            # namespace never sees either end.
            _ip(
                "-n",
                self.cli,
                "link",
                "add",
                "veth-cli",
                "type",
                "veth",
                "peer",
                "name",
                "veth-srv",
            )
            _ip("-n", self.cli, "link", "set", "veth-srv", "netns", self.srv)
            for ns, dev, host in ((self.cli, "veth-cli", 1), (self.srv, "veth-srv", 2)):
                _ip("-n", ns, "addr", "add", NS_SUBNET.format(n=self.n, host=host), "dev", dev)
                _ip("-n", ns, "link", "set", dev, "up")
                self._shape(ns, dev)
            self._home_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
            fd = os.open(f"/run/netns/{self.cli}", os.O_RDONLY)
            try:
                _setns(fd)
            finally:
                os.close(fd)
        except BaseException:
            self.destroy()
            raise

    def _shape(self, ns: str, dev: str) -> None:
        s = self.spec
        tc = ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev]
        parent = ["root"]
        if s.delay_ms:
            done = subprocess.run(
                [
                    *tc,
                    "root",
                    "handle",
                    "1:",
                    "netem",
                    "delay",
                    f"{s.delay_ms}ms",
                    "limit",
                    "100000",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            if done.returncode == 0:
                parent = ["parent", "1:1"]
            else:
                # Some kernels are built without sch_netem: shape the rate anyway and report
                # the delay as not applied rather than refusing the whole profile.
                self.delay_error = done.stderr.strip() or "netem failed"
        if s.rate_mbit:
            burst = s.burst_bytes or max(64 << 10, int(s.rate_mbit * 1e6 / 8 / 1000))
            done = subprocess.run(
                [
                    *tc,
                    *parent,
                    "handle",
                    "10:",
                    "tbf",
                    "rate",
                    f"{s.rate_mbit}mbit",
                    "burst",
                    str(burst),
                    "latency",
                    "50ms",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            if done.returncode != 0:
                raise ProfileError(f"tc tbf on {dev} failed: {done.stderr.strip()}")

    def ping_ms(self, samples: int = 20) -> float:
        """Median TCP handshake time to a listener in the broker namespace (one round
        trip; there may be no ping binary, and the kernel answers SYNs without accept())."""
        import socket
        import statistics
        import sys
        import time

        port = 17_000 + self.n
        code = (
            "import socket, sys, time; s = socket.socket(); "
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
            f"s.bind(({self.broker_host!r}, {port})); "
            "s.listen(128); print('up', flush=True); time.sleep(30)"
        )
        server = subprocess.Popen(
            [*self.broker_wrap, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        try:
            if server.stdout is None or server.stdout.readline().strip() != "up":
                return float("nan")
            times = []
            for _ in range(samples):
                started = time.perf_counter()
                with socket.create_connection((self.broker_host, port), timeout=5):
                    times.append((time.perf_counter() - started) * 1000)
            return round(statistics.median(times), 3)
        finally:
            server.kill()
            server.wait()

    def destroy(self) -> None:
        if self._home_fd is not None:
            try:
                _setns(self._home_fd)
            finally:
                os.close(self._home_fd)
                self._home_fd = None
        for ns in (self.srv, self.cli):
            # Deleting a namespace removes the veth end inside it (and so the pair).
            _ip("netns", "del", ns, check=False)
