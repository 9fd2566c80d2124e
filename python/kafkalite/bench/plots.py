"""PNG plots of one run (matplotlib, headless): throughput over time, latency percentiles
on a log axis, throughput vs offered load, and bars per hardware profile."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kafkalite.bench.histogram import Histogram
from kafkalite.bench.report import limits

PERCENTILES = [50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100]
# One colour per system in every chart, so a system is recognised at a glance; what is
# measured (produce/consume, publish/end-to-end) is told by line style or hatching instead.
SYSTEM_COLOURS = {"kafkalite": "tab:blue", "kafka": "tab:orange", "tansu": "tab:green"}
OTHER_COLOURS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"]
LIMIT_STYLES = {
    "disk": {"color": "tab:gray", "ls": ":", "lw": 1.5},
    "net": {"color": "tab:gray", "ls": "-.", "lw": 1.2},
}


def colour(system: str) -> str:
    if system in SYSTEM_COLOURS:
        return SYSTEM_COLOURS[system]
    return OTHER_COLOURS[sum(map(ord, system)) % len(OTHER_COLOURS)]


def profile_label(profile: str) -> str:
    """A run without a hardware profile is labelled so, not "none"."""
    return "no profile" if profile in ("", "none", None) else profile


def _legend(ax: Any) -> None:
    # Outside the axes, on the right: a legend never covers bars or lines.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _limit_lines(ax: Any, rows: list[dict[str, Any]], which: tuple[str, ...]) -> None:
    """The measured disk (fio) and network (iperf3) limits as labelled horizontal lines."""
    lim = limits(rows)
    names = {
        "disk": ("disk_buffered_mb_s", "disk limit (fio)"),
        "net": ("net_plain_mb_s", "network limit (iperf3)"),
    }
    for key in which:
        field, label = names[key]
        value = lim.get(field, math.nan)
        if value == value and value > 0:  # not NaN: measured in this run
            ax.axhline(value, label=f"{label} {value:,.0f} MiB/s", **LIMIT_STYLES[key])


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> bool:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def _results(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("kind") == "result" and r.get("driver") == "confluent-kafka"]


def throughput_over_time(rows: list[dict[str, Any]], path: Path) -> bool:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for r in _results(rows):
        if (
            r["phase"] not in ("produce", "catch-up", "backlog-produce")
            or r.get("run_index", 0) != 0
        ):
            continue
        for key, label in (
            ("timeline_produce_mb_s", "produce"),
            ("timeline_consume_mb_s", "consume"),
        ):
            series = r.get(key)
            if series and not (r["phase"] == "produce" and label == "consume"):
                phase = "catch-up read" if r["phase"] == "catch-up" else label
                ax.plot(
                    range(len(series)),
                    series,
                    label=f"{r['system']} {phase}",
                    marker=".",
                    color=colour(r["system"]),
                    ls="-" if label == "produce" else "--",
                )
                drawn = True
    if not drawn:
        plt.close(fig)
        return False
    _limit_lines(ax, rows, ("disk", "net"))
    ax.set_xlabel("seconds since the phase started")
    ax.set_ylabel("MiB/s (1 s buckets)")
    ax.set_title("Throughput over time (first run of each system)")
    ax.grid(alpha=0.3)
    _legend(ax)
    return _save(plt, fig, path)


def latency_percentiles(rows: list[dict[str, Any]], path: Path) -> bool:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = False
    xs = [1 / (1 - p / 100) if p < 100 else 1e5 for p in PERCENTILES]
    for system in sorted({r["system"] for r in _results(rows)}):
        prod = [r for r in _results(rows) if r["system"] == system and r["phase"] == "produce"]
        for key, label, style in (
            ("publish_hist", "publish", "-"),
            ("e2e_hist", "end-to-end", "--"),
        ):
            hists = [Histogram.from_json(r[key]) for r in prod if key in r]
            h = Histogram.merged(hists)
            if h.total == 0:
                continue
            ys = [h.percentile_us(p) / 1000 for p in PERCENTILES]
            ax.plot(xs, ys, marker="o", ls=style, color=colour(system), label=f"{system} {label}")
            drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"p{p:g}" if p < 100 else "max" for p in PERCENTILES], fontsize=8)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency, ms (log)")
    ax.set_title("Latency percentiles, produce phase (all runs merged)")
    ax.grid(alpha=0.3, which="both")
    _legend(ax)
    return _save(plt, fig, path)


def throughput_vs_offered(rows: list[dict[str, Any]], path: Path) -> bool:
    plt = _plt()
    pts = [r for r in _results(rows) if r["phase"] == "fixed-rate"]
    if not pts:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.5))
    for system in sorted({r["system"] for r in pts}):
        mine = sorted((r for r in pts if r["system"] == system), key=lambda r: r["offered_msgs_s"])
        size = mine[0]["bytes"] / max(mine[0]["records"], 1)
        offered = [r["offered_msgs_s"] * size / (1 << 20) for r in mine]
        c = colour(system)
        ax1.plot(offered, [r["produce_mb_s"] for r in mine], marker="o", color=c, label=system)
        ax2.plot(
            offered,
            [r["publish_latency"]["p99_ms"] for r in mine],
            marker="o",
            color=c,
            label=f"{system} publish p99",
        )
        ax2.plot(
            offered,
            [r.get("e2e_latency", {}).get("p99_ms", math.nan) for r in mine],
            marker="x",
            ls="--",
            color=c,
            label=f"{system} e2e p99",
        )
    ax1.set_xlabel("offered load, MiB/s")
    ax1.set_ylabel("achieved, MiB/s")
    ax1.set_title("Throughput vs offered load")
    ax2.set_xlabel("offered load, MiB/s")
    ax2.set_ylabel("p99 latency, ms (log)")
    ax2.set_yscale("log")
    ax2.set_title("p99 latency vs offered load")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8, loc="upper left")
    _legend(ax2)
    return _save(plt, fig, path)


def bars_per_profile(rows: list[dict[str, Any]], path: Path) -> bool:
    """Produce and consume MiB/s per (profile, system): the bar is the median over runs, the
    whisker the spread (min to max); one colour per system, consume hatched; the measured
    disk and network limits as lines. One profile per run, so this plot gets interesting when
    analyze.py or a multi-profile run feeds it several runs."""
    plt = _plt()
    res = [r for r in _results(rows) if r["phase"] in ("produce", "catch-up")]
    if not res:
        return False
    keys = sorted({(r.get("profile", "none"), r["system"]) for r in res})

    def values(phase: str, field: str, key: tuple[str, str]) -> list[float]:
        return sorted(
            r[field]
            for r in res
            if r["phase"] == phase and (r.get("profile", "none"), r["system"]) == key
        )

    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(keys) + 3), 4.5))
    for x, key in enumerate(keys):
        for offset, phase, field, hatch in (
            (-0.2, "produce", "produce_mb_s", ""),
            (0.2, "catch-up", "consume_mb_s", "//"),
        ):
            v = values(phase, field, key)
            if not v:
                continue
            mid = v[len(v) // 2]
            ax.bar(
                x + offset,
                mid,
                width=0.4,
                color=colour(key[1]),
                hatch=hatch,
                edgecolor="white" if hatch else None,
                yerr=[[mid - v[0]], [v[-1] - mid]] if len(v) > 1 else None,
                capsize=3,
            )
    from matplotlib.patches import Patch

    handles = [Patch(color=colour(s), label=s) for s in sorted({k[1] for k in keys})]
    handles += [
        Patch(facecolor="white", edgecolor="black", label="produce"),
        Patch(facecolor="white", edgecolor="black", hatch="//", label="consume (catch-up)"),
    ]
    _limit_lines(ax, rows, ("disk", "net"))
    handles += [h for h in ax.get_legend_handles_labels()[0]]
    ax.set_xticks(list(range(len(keys))))
    ax.set_xticklabels([f"{profile_label(p)}\n{s}" for p, s in keys], fontsize=8)
    ax.set_ylabel("MiB/s (bar: median over runs; whisker: min-max)")
    ax.set_title("Throughput per hardware profile and system")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(
        handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0
    )
    return _save(plt, fig, path)


def write_plots(out_dir: Path, rows: list[dict[str, Any]]) -> list[str]:
    made = []
    for name, fn in (
        ("throughput-over-time.png", throughput_over_time),
        ("latency-percentiles.png", latency_percentiles),
        ("throughput-vs-offered-load.png", throughput_vs_offered),
        ("bars-per-profile.png", bars_per_profile),
    ):
        if fn(rows, out_dir / name):
            made.append(name)
    return made
