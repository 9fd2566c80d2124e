"""Fault injectors against one broker daemon (``Node``): crashes, pauses and damaged files.

Each fault is ``fault(target) -> str``: it breaks something, repairs what an operator
would (restart, free space), and returns one line saying what it did. Faults that destroy
data on purpose record what they destroyed in the target (``damaged`` offset ranges of a
corrupt batch, ``torn`` ranges cut off a segment's tail), so the check can tell a loss the
fault caused from a loss the broker caused. ``SINGLE_FAULTS`` names them for schedules."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.chaos.fusemount import FuseMount
from kafkalite.chaos.node import Node

# Files a broker leaves behind when it dies in the middle of a segment operation: the
# cleaner's output before its swap, a swap not yet renamed, a segment deleted later.
INTERRUPTED_SUFFIXES = (".cleaned", ".swap", ".deleted")
HEADER = struct.Struct(">qiiBiHi")  # base offset, length, epoch, magic, crc, attrs, last delta
HEADER_BYTES = 61  # a v2 batch header; its records follow


@dataclass
class Target:
    node: Node
    topic: str  # the checked topic, whose damage is tracked
    rng: random.Random = field(default_factory=random.Random)
    damaged: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    torn: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # Segment operations caught half done by a SIGKILL, counted from the files left.
    interrupted: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mount: FuseMount | None = None  # the log dir's FUSE layer, for power loss and EIO
    operator_skips: int = 0  # `kafkalite log scrub --skip` runs needed to start again
    op_turn: int = 0
    ops_hit: dict[str, int] = field(default_factory=dict)  # sigkill_segment_op's kills

    def partition_dirs(self, topic: str | None = None) -> list[Path]:
        name = topic or self.topic
        dirs = [d for d in self.node.log_dir.glob(f"{name}-*") if d.name[len(name) + 1 :].isdigit()]
        return sorted(dirs, key=lambda d: int(d.name.rsplit("-", 1)[1]))

    def start(self) -> None:
        """Start the broker as an operator would: a broker that refuses to start over a
        damaged closed segment (found by recovery after an unclean shutdown) is told to
        serve around it (`kafkalite log scrub --skip`), which is noted."""
        try:
            self.node.start()
            return
        except RuntimeError as e:
            if "log scrub" not in str(e):
                raise
        scrub = ["log", "scrub", "--log-dirs", str(self.node.log_dir), "--skip", "--json"]
        done = subprocess.run(
            [sys.executable, "-m", "kafkalite.cli", *scrub],
            capture_output=True,
            text=True,
        )
        self.operator_skips += 1
        self.notes.append(
            f"refused to start over a damaged segment; scrub --skip: {done.stdout[:300]}"
        )
        self.node.start()

    def count_interrupted(self) -> None:
        for f in self.node.log_dir.rglob("*"):
            for suffix in INTERRUPTED_SUFFIXES:
                if f.name.endswith(suffix):
                    self.interrupted[suffix] = self.interrupted.get(suffix, 0) + 1
        for _d in self.node.log_dir.glob("*-delete"):
            self.interrupted["-delete dir"] = self.interrupted.get("-delete dir", 0) + 1


def segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"))


def batches(segment: Path) -> list[tuple[int, int, int, int]]:
    """(byte position, size, first offset, last offset) of each whole batch in a segment."""
    data = segment.read_bytes()
    out, at = [], 0
    while at + HEADER_BYTES <= len(data):
        base, length, _epoch, _magic, _crc, _attrs, delta = HEADER.unpack_from(data, at)
        if length <= 0 or at + 12 + length > len(data):
            break
        out.append((at, 12 + length, base, base + delta))
        at += 12 + length
    return out


def sigkill(t: Target) -> str:
    """SIGKILL at a random moment (segments roll, the cleaner swaps and retention deletes
    all the time with the run's small settings), then restart."""
    time.sleep(t.rng.uniform(0, 1.0))
    t.node.kill()
    t.count_interrupted()
    t.start()
    return f"SIGKILL, restarted in {t.node.last_start_s * 1000:.0f} ms"


SEGMENT_OPS = ("compaction", "roll", "deletion")


def _segment_files(t: Target) -> tuple[set[str], bool]:
    """Every segment file of the three checked topics, and whether the cleaner's output
    (`.cleaned`) or a swap in progress (`.swap`) is among them."""
    names: set[str] = set()
    for d in t.node.log_dir.iterdir():
        if d.is_dir() and not d.name.startswith("__"):
            try:
                names.update(f"{d.name}/{f}" for f in os.listdir(d))
            except FileNotFoundError:
                continue
    busy = any(n.endswith((".cleaned", ".swap")) for n in names)
    return {n for n in names if n.endswith(".log")}, busy


def sigkill_segment_op(t: Target) -> str:
    """SIGKILL the moment a segment operation shows on disk, in turn: the cleaner's output
    being written or swapped in (`.cleaned`/`.swap` present), a roll (a new segment file),
    a deletion (a segment file gone: retention, or compaction's old segments). The kill
    comes within one poll (about a millisecond) of seeing it, so mostly inside the
    operation's own tail: its index writes, renames and directory syncs."""
    want = SEGMENT_OPS[t.op_turn % len(SEGMENT_OPS)]
    t.op_turn += 1
    before, _ = _segment_files(t)
    deadline = time.monotonic() + 15
    seen = "nothing (timed out)"
    while time.monotonic() < deadline:
        now, busy = _segment_files(t)
        hit = {
            "compaction": busy,
            "roll": bool(now - before),
            "deletion": bool(before - now),
        }[want]
        if hit:
            seen = want
            break
        before = now
    t.node.kill()
    t.ops_hit[seen] = t.ops_hit.get(seen, 0) + 1
    t.count_interrupted()
    t.start()
    return f"SIGKILL on {seen}, restarted in {t.node.last_start_s * 1000:.0f} ms"


def sigstop(t: Target) -> str:
    """SIGSTOP for 1-4 s (a long GC pause, a hung host), then SIGCONT."""
    pause = t.rng.uniform(1.0, 4.0)
    t.node.pause()
    try:
        time.sleep(pause)
    finally:
        t.node.resume()
    return f"SIGSTOP for {pause:.1f} s, SIGCONT"


def torn_tail(t: Target) -> str:
    """SIGKILL, cut 1-300 bytes off the newest segment of one partition (a torn write),
    restart. What was cut is recorded: recovery must keep every whole batch before it."""
    t.node.kill()
    # A partition whose newest segment holds data (the writers' keys may all hash to one).
    written = [d for d in t.partition_dirs() if segments(d) and batches(segments(d)[-1])]
    d = t.rng.choice(written or t.partition_dirs())
    newest = segments(d)[-1]
    whole = batches(newest)
    size = newest.stat().st_size
    if not whole:
        t.start()
        return f"torn tail: {newest.name} of {d.name} empty, nothing cut"
    cut = min(size - whole[-1][0], t.rng.randint(1, 300))
    keep = size - cut
    lost = [(first, last) for pos, n, first, last in whole if pos + n > keep]
    with newest.open("r+b") as f:
        f.truncate(keep)
    p = int(d.name.rsplit("-", 1)[1])
    t.torn.setdefault(p, []).extend(lost)
    t.start()
    offsets = f"offsets {lost[0][0]}..{lost[-1][1]}" if lost else "no whole batch"
    return f"torn tail: cut {cut} bytes off {d.name}/{newest.name}: {offsets}"


def corrupt_closed(t: Target) -> str:
    """Flip one byte inside a record of a closed segment while the broker runs (bit rot).
    The batch's CRC no longer matches: reads must fail there (CORRUPT_MESSAGE from the
    broker, or the client's own CRC check), never deliver it. A later restart finds it in
    recovery; ``Target.start`` then plays the operator."""
    choices = [(d, s) for d in t.partition_dirs() for s in segments(d)[:-1] if batches(s)]
    if not choices:
        return "corrupt: no closed segment yet, nothing done"
    d, seg = t.rng.choice(choices)
    pos, n, first, last = t.rng.choice(batches(seg))
    at = pos + HEADER_BYTES + t.rng.randrange(max(1, n - HEADER_BYTES))
    try:
        with seg.open("r+b") as f:
            f.seek(at)
            old = f.read(1)
            f.seek(at)
            f.write(bytes([old[0] ^ 0xFF]))
    except FileNotFoundError:
        return f"corrupt: {seg.name} deleted meanwhile, nothing done"
    p = int(d.name.rsplit("-", 1)[1])
    t.damaged.setdefault(p, []).append((first, last))
    return f"corrupt byte {at} of {d.name}/{seg.name} (broker running): batch {first}..{last}"


def missing_index(t: Target) -> str:
    """SIGKILL, delete every offset and time index of the topic, restart: rebuilt from
    the segments."""
    t.node.kill()
    gone = 0
    for d in t.partition_dirs():
        for f in [*d.glob("*.index"), *d.glob("*.timeindex")]:
            f.unlink()
            gone += 1
    t.start()
    return f"deleted {gone} index files, restarted"


def stale_index(t: Target) -> str:
    """Copy the indexes aside, let writes go on, SIGKILL, put the old copies back (an
    index older than its segment, as after a restored backup), restart."""
    saved: list[tuple[Path, bytes]] = []
    for d in t.partition_dirs():
        for f in [*d.glob("*.index"), *d.glob("*.timeindex")]:
            try:
                saved.append((f, f.read_bytes()))
            except FileNotFoundError:
                pass  # rolled or deleted just now
    time.sleep(t.rng.uniform(0.5, 1.5))
    t.node.kill()
    restored = 0
    for f, data in saved:
        if f.parent.exists():
            f.write_bytes(data)
            restored += 1
    t.start()
    return f"restored {restored} stale index files, restarted"


def disk_full(t: Target) -> str:
    """Fill the log dir's file system (a size-limited tmpfs), wait while appends fail,
    check the broker is still up, free the space and restart (Kafka's way back)."""
    fs = t.node.log_dir.parent
    filler = fs / "filler"
    free = shutil.disk_usage(fs).free
    with filler.open("wb") as f:
        try:
            f.write(b"\0" * max(0, free - (256 << 10)))
        except OSError:
            pass  # filled to the last block: the point
    time.sleep(3.0)
    alive = t.node.running
    filler.unlink()
    t.node.stop()
    t.start()
    if not alive:
        t.notes.append("the broker died on a full disk")
    return f"disk full for 3 s ({'broker stayed up' if alive else 'BROKER DIED'}), freed, restarted"


def power_loss(t: Target) -> str:
    """SIGKILL the broker and cut the power of its disk: every write not fsynced is gone
    (the FUSE layer holding it dies), then mount again and restart."""
    if t.mount is None:
        raise RuntimeError("power-loss needs the log dir on a FuseMount")
    time.sleep(t.rng.uniform(0, 1.0))
    t.node.kill()
    t.mount.power_cut()
    t.start()
    took = t.node.last_start_s * 1000
    return f"power cut (broker SIGKILLed, unsynced writes dropped), restarted in {took:.0f} ms"


def eio(t: Target) -> str:
    """The device answers EIO to every read, write and sync for 3 s, then heals; the
    broker must stay up, and after a restart every acknowledged write must be there."""
    if t.mount is None:
        raise RuntimeError("eio needs the log dir on a FuseMount")
    t.mount.fail(True)
    try:
        time.sleep(3.0)
        alive = t.node.running
    finally:
        t.mount.fail(False)
    if not alive:
        t.notes.append("the broker died on EIO")
    t.node.stop()
    t.start()
    return f"EIO for 3 s ({'broker stayed up' if alive else 'BROKER DIED'}), healed, restarted"


SINGLE_FAULTS: dict[str, Callable[[Target], str]] = {
    "sigkill": sigkill,
    "sigkill-segment-op": sigkill_segment_op,
    "sigstop": sigstop,
    "torn-tail": torn_tail,
    "corrupt-closed": corrupt_closed,
    "missing-index": missing_index,
    "stale-index": stale_index,
    "disk-full": disk_full,
    "eio": eio,
    "power-loss": power_loss,
}
