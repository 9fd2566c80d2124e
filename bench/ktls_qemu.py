"""Run the broker's kTLS test (rust/broker/tests/ktls.rs) under a kernel that has kernel
TLS, in QEMU, requiring the kTLS path: the machine's own kernel may lack `CONFIG_TLS`.

The kernel is Debian's: the package `linux-image-amd64` names the current one, fetched with
`apt-get download` (so from whatever mirror apt is configured with) and unpacked with
`dpkg -x`. A tiny initramfs holds busybox, the `tls` module with the crypto modules its
ciphers need, the test binary and the shared libraries it links. The guest loads the
modules, brings up `lo`, runs the test with `KAFKALITE_REQUIRE_KTLS=1`, prints its lines
on the serial console and powers off. QEMU runs without KVM (TCG) unless `--kvm`.

Needs: qemu-system-x86_64, busybox (static), apt-get/dpkg, objcopy, ldd, a Rust
toolchain. On Debian: `apt-get install qemu-system-x86 busybox-static`.

The last stdout line is JSON: kernel_release, kernel_tls, cipher_suites, paths,
bytes_verified, cases, path (kTLS only if every case took it), seconds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The `tls` module and the crypto modules behind the ciphers kTLS offers (AES-GCM,
# ChaCha20-Poly1305) with their dependencies; the kernel's own lookups (`gcm(aes)`) then
# find them registered, with no modprobe in the guest.
MODULES = [
    "tls",
    "gcm",
    "ghash-generic",
    "ctr",
    "cryptd",
    "crypto_simd",
    "aesni-intel",
    "ghash-clmulni-intel",
    "chacha20poly1305",
    "chacha_generic",
    "chacha-x86_64",
    "poly1305_generic",
    "poly1305-x86_64",
]

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /tmp && mount -t tmpfs tmp /tmp
for m in $(cat /modules.order); do
    insmod /modules/$m.ko || echo "ktls-guest: insmod $m failed"
done
ip link set lo up
echo "ktls-guest: kernel $(uname -r)"
cd /tmp
KAFKALITE_REQUIRE_KTLS=1 /ktls-test --test-threads=1 --nocapture
echo "ktls-guest: exit $?"
poweroff -f
"""


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def build_test() -> Path:
    """Build the broker's ktls integration test; the path of its executable."""
    out = run(
        [
            "cargo",
            "test",
            "-p",
            "kafkalite-broker",
            "--test",
            "ktls",
            "--no-run",
            "--message-format=json",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            if msg["target"]["name"] == "ktls":
                return Path(msg["executable"])
    sys.exit("ktls_qemu: cargo built no ktls test executable")


def fetch_kernel(cache: Path) -> tuple[Path, Path, str]:
    """The vmlinuz, the modules tree and the release of Debian's current amd64 kernel."""
    depends = run(
        ["apt-cache", "depends", "linux-image-amd64"], stdout=subprocess.PIPE, text=True
    ).stdout
    match = re.search(r"Depends: (linux-image-[0-9][^\s]*-amd64)\b", depends)
    if not match:
        sys.exit("ktls_qemu: apt-cache names no linux-image-*-amd64 (run apt-get update)")
    package = match.group(1)
    release = package.removeprefix("linux-image-")
    root = cache / package
    if not (root / "boot" / f"vmlinuz-{release}").exists():
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob(f"{package}_*.deb"):
            old.unlink()
        run(["apt-get", "download", package], cwd=cache, stdout=subprocess.DEVNULL)
        deb = next(cache.glob(f"{package}_*.deb"))
        run(["dpkg", "-x", str(deb), str(root)])
    return root / "boot" / f"vmlinuz-{release}", root / "lib/modules" / release, release


def module_files(tree: Path) -> dict[str, Path]:
    """Module name (dashes as underscores) -> its file, for every module in the tree."""
    files = {}
    for path in tree.rglob("*.ko*"):
        name = path.name.split(".ko")[0].replace("-", "_")
        files[name] = path
    return files


def module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".zst"):
        return run(["zstd", "-dc", str(path)], stdout=subprocess.PIPE).stdout
    return data


def depends(ko: bytes, scratch: Path) -> list[str]:
    """The `depends=` of a module's .modinfo section."""
    raw, info = scratch / "m.ko", scratch / "m.info"
    raw.write_bytes(ko)
    run(["objcopy", "-O", "binary", "--only-section=.modinfo", str(raw), str(info)])
    for field in info.read_bytes().split(b"\0"):
        if field.startswith(b"depends="):
            return [d for d in field[8:].decode().split(",") if d]
    return []


def load_order(tree: Path, scratch: Path) -> list[tuple[str, bytes]]:
    """The wanted modules present in this kernel and their dependencies, dependencies
    first (built-in ones, absent from the tree, are skipped)."""
    files = module_files(tree)
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen or name not in files:
            return
        seen.add(name)
        ko = module_bytes(files[name])
        for dep in depends(ko, scratch):
            visit(dep)
        order.append((name, ko))

    for name in MODULES:
        visit(name)
    if "tls" not in seen:
        sys.exit("ktls_qemu: this kernel package has no tls module")
    return order


def libraries(binary: Path) -> list[Path]:
    out = run(["ldd", str(binary)], stdout=subprocess.PIPE, text=True).stdout
    return [Path(p) for p in re.findall(r"(/\S+) \(0x", out)]


def initramfs(binary: Path, modules: list[tuple[str, bytes]], out: Path) -> None:
    root = out.parent / "root"
    for sub in ["bin", "proc", "sys", "dev", "modules"]:
        (root / sub).mkdir(parents=True, exist_ok=True)
    busybox = shutil.which("busybox")
    if not busybox:
        sys.exit("ktls_qemu: needs busybox (Debian: busybox-static)")
    shutil.copy(busybox, root / "bin" / "busybox")
    for name, ko in modules:
        (root / "modules" / f"{name}.ko").write_bytes(ko)
    (root / "modules.order").write_text(" ".join(name for name, _ in modules) + "\n")
    run(["objcopy", "--strip-debug", str(binary), str(root / "ktls-test")])
    for lib in libraries(binary):
        dest = root / lib.relative_to("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(lib, dest)
    init = root / "init"
    init.write_text(INIT)
    init.chmod(0o755)
    out.write_bytes(gzip.compress(newc_archive(root), compresslevel=1))


def newc_archive(root: Path) -> bytes:
    """The tree under `root` as a cpio "newc" archive, the format the kernel unpacks
    into its initial root file system (directories and regular files only)."""
    parts: list[bytes] = []

    def entry(name: str, mode: int, data: bytes, ino: int) -> None:
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        named = header + name.encode() + b"\0"
        parts.append(named + b"\0" * (-len(named) % 4))
        parts.append(data + b"\0" * (-len(data) % 4))

    paths = sorted(root.rglob("*"))
    for ino, path in enumerate(paths, start=1):
        name = str(path.relative_to(root))
        mode = path.stat().st_mode
        entry(name, mode, b"" if path.is_dir() else path.read_bytes(), ino)
    entry("TRAILER!!!", 0, b"", 0)
    return b"".join(parts)


def boot(kernel: Path, initrd: Path, kvm: bool, timeout_s: int) -> str:
    cmd = [
        "qemu-system-x86_64",
        "-kernel",
        str(kernel),
        "-initrd",
        str(initrd),
        "-append",
        "console=ttyS0 panic=-1 quiet",
        "-nographic",
        "-no-reboot",
        "-m",
        "1G",
        "-smp",
        "2",
        "-net",
        "none",
    ]
    cmd += ["-enable-kvm", "-cpu", "host"] if kvm else ["-cpu", "max"]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
    return done.stdout.decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kvm", action="store_true", help="use KVM (default: TCG)")
    parser.add_argument("--timeout", type=int, default=900, help="guest seconds max")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kafkalite-ktls-qemu",
        help="where the kernel package is kept between runs",
    )
    args = parser.parse_args()
    started = time.monotonic()
    binary = build_test()
    kernel, tree, release = fetch_kernel(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        modules = load_order(tree, scratch)
        initrd = scratch / "initrd.gz"
        initramfs(binary, modules, initrd)
        console = boot(kernel, initrd, args.kvm, args.timeout)
    lines = [line.rstrip("\r") for line in console.splitlines()]
    for line in lines:
        if line.startswith(("ktls-", "test ", "thread ")) or "panicked" in line:
            # --nocapture puts the broker's log lines behind the test names.
            print(line.split(" ... [", 1)[0])
    result = next(
        (json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("ktls-result ")),
        None,
    )
    passed = any(re.search(r"test result: ok\. [1-9]", line) for line in lines)
    if result is None or not passed:
        print(console[-4000:], file=sys.stderr)
        sys.exit("ktls_qemu: the test did not pass in the guest")
    paths = set(result["paths"])
    result.update(
        {
            "debian_package": f"linux-image-{release}",
            "modules_loaded": [name for name, _ in modules],
            "cases": [line for line in lines if line.startswith("ktls-case ")],
            "path": "ktls" if paths == {"ktls"} else ",".join(sorted(paths)),
            "accelerator": "kvm" if args.kvm else "tcg",
            "seconds": round(time.monotonic() - started, 1),
        }
    )
    print(json.dumps(result))


if __name__ == "__main__":
    os.environ.setdefault("CARGO_TERM_COLOR", "never")
    main()
