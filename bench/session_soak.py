"""Session soak: a 3-broker kafkalite cluster at its defaults (`Cluster(brokers=3)`, no
overrides) under steady produce/consume load while busy loops keep the machine's load
average at or above --min-load, with no fault injected, for --minutes. Counts what must
then stay at zero: ZooKeeper session expirations and leader changes. Not a test; the last
line printed is JSON, also written to --out with a plot.

    python bench/session_soak.py --minutes 30 --out bench/results/session-soak

- load: an idempotent acks=all producer (kafkalite.chaos.checker.Writers, numbered
  records, --rate records/s) into a 6-partition RF 3 topic, and a consumer group of two
  reading it and committing (its offsets partitions are watched too); at the end the topic
  is read back and compared with the acknowledgements (lost, duplicated must be 0).
- CPU pressure: --burners busy-loop processes at nice 0 from the start, and one more each
  time the 1-minute load average is below --min-load at a sample (up to --max-burners).
- session expirations, three ways: a broker's registration /brokers/ids/<id> that
  disappears or comes back under another session (ephemeralOwner), sampled every second;
  ZooKeeper's own log lines "Expiring session 0x..." for a broker's session; and broker log
  lines that speak of an expired session.
- leader changes: every second the partition state znodes of the topic and of
  __consumer_offsets (leader, leader_epoch, isr); any leader or leader-epoch change is
  listed with its time. ISR changes and controller changes (/controller_epoch) are
  counted too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.bench.clusters import KafkaliteCluster
from kafkalite.chaos.checker import Writers, check
from kafkalite.controller import znodes

TOPIC = "session-soak"
PARTITIONS = 6
OFFSETS_TOPIC = "__consumer_offsets"
BURNER = "import os\nos.nice(0)\nwhile True:\n    pass\n"
SESSION_WORDS = re.compile(r"session (has )?expired|expired session|session expir", re.I)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] session-soak: {msg}", file=sys.stderr, flush=True)


class Burners:
    """Busy-loop processes: CPU pressure as a loaded host gives it."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def add(self) -> None:
        self.procs.append(subprocess.Popen([sys.executable, "-c", BURNER]))

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []


class Readers:
    """A consumer group of two reading the topic and committing (auto-commit)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.consumed = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Readers:
        self._thread.start()
        return self

    def _run(self) -> None:
        members = [
            Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": "session-soak-readers",
                    "auto.offset.reset": "earliest",
                    "log_level": 0,
                }
            )
            for _ in range(2)
        ]
        try:
            for c in members:
                c.subscribe([TOPIC])
            while not self._stop.is_set():
                for c in members:
                    for m in c.consume(500, timeout=0.1):
                        if m.error() is None:
                            self.consumed += 1
                        else:
                            self.errors += 1
        finally:
            for c in members:
                c.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


class Watch:
    """Every second: the brokers' registrations and the watched partitions' states."""

    def __init__(self, cl: KafkaliteCluster, started: float) -> None:
        self.zk = cl.cluster.zk
        self.ids = cl.broker_ids
        self.started = started
        self.sessions: dict[int, set[int]] = {b: set() for b in self.ids}
        self.registration_gone: list[dict[str, Any]] = []
        self.registration_changed: list[dict[str, Any]] = []
        self.leader_changes: list[dict[str, Any]] = []
        self.isr_changes = 0
        self.controller_epochs: set[int] = set()
        # (time, broker, session) each time /controller is held by another session
        self.controller_changes: list[dict[str, Any]] = []
        self.last_controller: tuple[int, int] | None = None
        self.last_owner: dict[int, int | None] = {}
        self.last_state: dict[tuple[str, int], dict[str, Any]] = {}
        self.partitions: list[tuple[str, int]] = []

    def watch_partitions(self) -> None:
        self.partitions = [(TOPIC, p) for p in range(PARTITIONS)]
        offsets = znodes.topic_path(OFFSETS_TOPIC) + "/partitions"
        if self.zk.exists(offsets):
            self.partitions += [(OFFSETS_TOPIC, int(p)) for p in self.zk.get_children(offsets)]

    def t(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def sample(self) -> None:
        for b in self.ids:
            stat = self.zk.exists(znodes.broker_path(b))
            owner = None if stat is None else stat.ephemeralOwner
            before = self.last_owner.get(b, "unset")
            if owner is None and before not in (None, "unset"):
                self.registration_gone.append({"t_s": self.t(), "broker": b})
            elif owner is not None and before not in ("unset", None, owner):
                self.registration_changed.append({"t_s": self.t(), "broker": b})
            if owner is not None:
                self.sessions[b].add(owner)
            self.last_owner[b] = owner
        try:
            data, stat = self.zk.get(znodes.CONTROLLER)
            seat = (znodes.parse_controller(data), stat.ephemeralOwner)
            if self.last_controller is not None and seat != self.last_controller:
                self.controller_changes.append({"t_s": self.t(), "controller": seat[0]})
            self.last_controller = seat
        except Exception:  # no controller at this instant: the next sample tells
            pass
        try:
            data, _ = self.zk.get(znodes.CONTROLLER_EPOCH)
            self.controller_epochs.add(int(data))
        except Exception:  # absent or unreadable: nothing to count
            pass
        for topic, p in self.partitions:
            try:
                data, _ = self.zk.get(znodes.partition_state_path(topic, p))
            except Exception:  # not created yet
                continue
            state = json.loads(data)
            old = self.last_state.get((topic, p))
            if old is not None:
                if (old["leader"], old["leader_epoch"]) != (state["leader"], state["leader_epoch"]):
                    self.leader_changes.append(
                        {
                            "t_s": self.t(),
                            "partition": f"{topic}-{p}",
                            "leader": [old["leader"], state["leader"]],
                            "leader_epoch": [old["leader_epoch"], state["leader_epoch"]],
                        }
                    )
                if sorted(old["isr"]) != sorted(state["isr"]):
                    self.isr_changes += 1
            self.last_state[(topic, p)] = state


def zookeeper_expirations(log_path: Path, sessions: set[int]) -> dict[str, Any]:
    """ZooKeeper's "Expiring session 0x..." lines: for a broker's session, and others.
    `logged` is False when the server logs nothing at INFO (Debian's jar alone has no
    SLF4J binding): then only the registrations tell."""
    out: dict[str, Any] = {"brokers": 0, "others": 0, "logged": False}
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return out
    out["logged"] = " INFO " in text
    for m in re.finditer(r"Expiring session (0x[0-9a-fA-F]+)", text):
        out["brokers" if int(m.group(1), 16) in sessions else "others"] += 1
    return out


def broker_log_expirations(cl: KafkaliteCluster) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for b in cl.cluster.brokers:
        try:
            lines = (b.data_dir / "broker.log").read_text(errors="replace").splitlines()
        except OSError:
            continue
        hits = [line[:300] for line in lines if SESSION_WORDS.search(line)]
        if hits:
            out[f"broker-{b.broker_id}"] = hits[:20]
    return out


def plot(samples: list[dict[str, Any]], watch: Watch, min_load: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    ts = [s["t_s"] / 60 for s in samples]
    ax.plot(ts, [s["load1"] for s in samples], color="tab:blue", label="load average (1 min)")
    ax.plot(ts, [s["burners"] for s in samples], color="tab:gray", ls=":", label="busy loops")
    ax.axhline(min_load, color="tab:red", ls="--", lw=1, label=f"target >= {min_load:g}")
    for c in watch.leader_changes:
        ax.axvline(c["t_s"] / 60, color="tab:orange", lw=0.8)
    for c in watch.registration_gone + watch.registration_changed:
        ax.axvline(c["t_s"] / 60, color="black", lw=1.2)
    ax.set_xlabel("minutes")
    ax.set_ylabel("load")
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"kafkalite 3 brokers at defaults, {os.cpu_count()} cores: "
        f"{len(watch.leader_changes)} leader changes (orange), "
        f"{len(watch.registration_gone) + len(watch.registration_changed)} re-registrations "
        "(black)",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=500.0, help="records/s produced")
    ap.add_argument("--min-load", type=float, default=4.0)
    ap.add_argument("--burners", type=int, default=4, help="busy loops from the start")
    ap.add_argument("--max-burners", type=int, default=8)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    burners = Burners()
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kafkalite-session-soak-") as tmp:
        cl = KafkaliteCluster(Path(tmp) / "cluster", 3, overrides={})
        cl.start()
        try:
            admin = AdminClient({"bootstrap.servers": cl.bootstrap, "log_level": 0})
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(120)
            writers = Writers(
                cl.bootstrap,
                TOPIC,
                writers=1,
                rate=args.rate,
                config={"message.timeout.ms": 300000, "log_level": 0},
            ).start()
            writers.wait_acked(50, 120)
            readers = Readers(cl.bootstrap).start()
            started = time.monotonic()
            watch = Watch(cl, started)
            for _ in range(args.burners):
                burners.add()
            log(f"cluster up, load running, {args.burners} busy loops; {args.minutes} min")
            end = started + args.minutes * 60
            next_sample = started
            while time.monotonic() < end:
                watch.sample()
                now = time.monotonic()
                if now >= next_sample:
                    watch.watch_partitions()  # __consumer_offsets once it exists
                    load1 = os.getloadavg()[0]
                    # Not in the first minute: the 1-minute average is still climbing.
                    if (
                        now - started > 60
                        and load1 < args.min_load
                        and len(burners.procs) < args.max_burners
                    ):
                        burners.add()
                    samples.append(
                        {
                            "t_s": round(now - started, 1),
                            "load1": round(load1, 2),
                            "burners": len(burners.procs),
                            "acked": writers.acked_count,
                            "consumed": readers.consumed,
                        }
                    )
                    if len(samples) % 12 == 0:
                        log(
                            f"{samples[-1]}; leader changes {len(watch.leader_changes)}, "
                            f"re-registrations {len(watch.registration_gone)}"
                            f"+{len(watch.registration_changed)}"
                        )
                    next_sample += 5
                time.sleep(1.0)
            burners.stop()
            readers.stop()
            writers.stop()
            result = check(writers, cl.bootstrap, TOPIC, 180)
            sessions = set().union(*watch.sessions.values())
            zk_log = cl.cluster.data_dir / "zookeeper" / "zookeeper.log"
            steady = [s["load1"] for s in samples if s["t_s"] >= 60]
            report = {
                "started": started_at,
                "command": " ".join(["python", "bench/session_soak.py", *sys.argv[1:]]),
                "minutes": args.minutes,
                "cpus": os.cpu_count(),
                "settings": cl.settings,
                "load_average": {
                    "mean_after_first_minute": round(statistics.fmean(steady), 2)
                    if steady
                    else None,
                    "min_after_first_minute": min(steady) if steady else None,
                    "max": max(s["load1"] for s in samples) if samples else None,
                    "samples_below_target": sum(1 for x in steady if x < args.min_load),
                },
                "busy_loops_max": max((s["burners"] for s in samples), default=0),
                "session_expirations": {
                    "registration_gone": watch.registration_gone,
                    "registration_new_session": watch.registration_changed,
                    "zookeeper_log_expiring": zookeeper_expirations(zk_log, sessions),
                    "broker_log_lines": broker_log_expirations(cl),
                },
                "leader_changes": len(watch.leader_changes),
                "leader_change_list": watch.leader_changes[:50],
                "partitions_watched": len(watch.partitions),
                "isr_changes": watch.isr_changes,
                "controller_epochs_seen": sorted(watch.controller_epochs),
                "controller_changes": watch.controller_changes,
                "produced_acked": writers.acked_count,
                "consumed": readers.consumed,
                "consumer_errors": readers.errors,
                "check": {**result.as_dict(), "errors": dict(writers.errors)},
            }
            expired = (
                len(watch.registration_gone)
                + len(watch.registration_changed)
                + report["session_expirations"]["zookeeper_log_expiring"]["brokers"]
            )
            report["verdict"] = {
                "session_expirations": expired,
                "leader_changes": len(watch.leader_changes),
                "controller_changes": len(watch.controller_changes),
                "ok": expired == 0
                and not watch.leader_changes
                and not watch.controller_changes
                and result.lost == 0
                and result.duplicated == 0,
            }
        finally:
            burners.stop()
            cl.stop()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "session-soak.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
        plot(samples, watch, args.min_load, args.out / "session-soak.png")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
