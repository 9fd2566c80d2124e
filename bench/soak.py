"""Soak: a broker daemon under mixed load for --minutes, its RSS, open fds, threads and p99
produce latency sampled every 10 s and plotted, then the limits (10,000 idle connections,
one-byte-a-second senders, clients that never read, a 100 MB fetch from many connections
at once). Not a test; the last line is JSON.

The load, all at once: idempotent acks=all producers at a fixed rate into 3 topics of 4
partitions (retention.bytes keeps the disk bounded, so segments roll and are deleted all
along); a consumer group of 2 reading them and committing; group churn (a new group's
consumer joins, commits and leaves every 2 s); topic churn (a topic created, written and
deleted every 3 s). "Flat" is judged after the warm-up (the first fifth of the run, at
least 60 s): the median of the last quarter of the samples against the median of the
first quarter after warm-up, and the whole range (max - min) against the median.

    python bench/soak.py --minutes 30 --out bench/results/soak
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from _common import MIB, scratch_dir
from _soak_limits import LIMITS
from _soak_load import Load

from kafkalite.chaos.node import Node

SAMPLE_S = 10.0
METRICS = ("rss_mb", "fds", "threads", "p99_produce_ms")


class Sampler(threading.Thread):
    """Every SAMPLE_S: the broker's /proc figures and the producers' p99 since the last."""

    def __init__(self, node: Node, load: Load, started: float) -> None:
        super().__init__(daemon=True)
        self.node, self.load, self.started = node, load, started
        self.rows: list[dict[str, Any]] = []
        self.phase = "soak"
        self._halt = threading.Event()

    def sample(self) -> dict[str, Any]:
        u = self.node.usage()
        lat = self.load.take_latencies()
        row = {
            "t_s": round(time.monotonic() - self.started, 1),
            "phase": self.phase,
            "rss_mb": round(u["rss_bytes"] / MIB, 1),
            "fds": u["fds"],
            "threads": u["threads"],
            "p99_produce_ms": round(_p99(lat) * 1000, 2) if lat else None,
            "produced": len(lat),
        }
        self.rows.append(row)
        return row

    def run(self) -> None:
        while not self._halt.wait(SAMPLE_S):
            row = self.sample()
            print(json.dumps(row), flush=True)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _p99(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * 0.99))]


def flatness(rows: list[dict[str, Any]], warmup_s: float) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for m in METRICS:
        vals = [r[m] for r in rows if r["phase"] == "soak" and r["t_s"] >= warmup_s]
        vals = [v for v in vals if v is not None]
        if len(vals) < 4:
            continue
        q = max(1, len(vals) // 4)
        first, last = statistics.median(vals[:q]), statistics.median(vals[-q:])
        med = statistics.median(vals)
        out[m] = {
            "first_quarter_median": round(first, 2),
            "last_quarter_median": round(last, 2),
            "drift_pct": round(100 * (last - first) / first, 1) if first else 0.0,
            "range_pct_of_median": round(100 * (max(vals) - min(vals)) / med, 1) if med else 0.0,
            "min": min(vals),
            "max": max(vals),
        }
    return out


def plot(rows: list[dict[str, Any]], warmup_s: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(METRICS), 1, figsize=(8, 9), sharex=True)
    soak_end = max((r["t_s"] for r in rows if r["phase"] == "soak"), default=0)
    for ax, m in zip(axes, METRICS, strict=True):
        pts = [(r["t_s"] / 60, r[m]) for r in rows if r[m] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", linewidth=1)
        ax.axvspan(0, warmup_s / 60, color="grey", alpha=0.15, label="warm-up")
        ax.axvspan(soak_end / 60, max(p[0] for p in pts), color="orange", alpha=0.15)
        ax.set_ylabel(m)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_title("kafkalite soak: broker process, sampled every 10 s (orange: limit probes)")
    axes[-1].set_xlabel("minutes")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="soak length (default 30)")
    parser.add_argument("--rate", type=int, default=2000, help="records/s produced (default 2000)")
    parser.add_argument("--idle", type=int, default=10000, help="idle connections (default 10000)")
    parser.add_argument("--fetchers", type=int, default=8, help="100 MB fetchers at once")
    parser.add_argument("--fetch-mb", type=int, default=100, help="MB each fetcher asks for")
    parser.add_argument("--hold-s", type=float, default=20.0, help="how long idle conns stay")
    parser.add_argument(
        "--idle-ms", type=int, default=60000, help="broker connections.max.idle.ms (default 60 s)"
    )
    parser.add_argument("--out", type=Path, help="write soak.json, soak.png and report here")
    parser.add_argument("--no-limits", action="store_true", help="skip the limit probes")
    parser.add_argument("--data", type=Path, help="broker data dir (default: bench/scratch/soak)")
    args = parser.parse_args()

    data = args.data or scratch_dir("soak")
    # A 60 s idle limit (Kafka: 10 min) so the slow-client probe sees them cut in the run;
    # the idle probe holds its connections for less than that.
    overrides = {
        "log.retention.check.interval.ms": 5000,
        "num.partitions": 4,
        "connections.max.idle.ms": args.idle_ms,
    }
    started = time.monotonic()
    with Node(data, overrides) as node:
        load = Load(node.bootstrap_servers, rate=args.rate)
        sampler = Sampler(node, load, started)
        sampler.sample()
        load.start()
        sampler.start()
        time.sleep(args.minutes * 60)
        load.stop()
        limits: dict[str, Any] = {}
        if not args.no_limits:
            for name, probe in LIMITS.items():
                sampler.phase = name
                print(f"limit probe: {name}", flush=True)
                limits[name] = probe(node, args)
                limits[name]["broker_alive"] = node.running
                print(json.dumps({name: limits[name]}), flush=True)
        sampler.stop()
        restarts = node.restarts
    warmup_s = max(60.0, args.minutes * 60 / 5)
    result = {
        "minutes": args.minutes,
        "rate": args.rate,
        "warmup_s": warmup_s,
        "load": load.totals(),
        "flatness": flatness(sampler.rows, warmup_s),
        "limits": limits,
        "broker_restarts": restarts,
    }
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sampler.rows))
        (args.out / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
        plot(sampler.rows, warmup_s, args.out / "soak.png")
    print(json.dumps({"soak": result}))


if __name__ == "__main__":
    main()
