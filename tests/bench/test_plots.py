"""The bench plots from a canned results.jsonl: one colour per system in every chart, the
hardware profile "none" labelled "no profile", legends outside the axes, the measured
disk/network limits drawn as lines, the run-to-run spread as whiskers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="pip install '.[bench]'")

from matplotlib.colors import to_hex, to_rgb
from matplotlib.container import BarContainer

from kafkalite.bench import plots, report

CANNED = Path(__file__).parent / "data" / "canned-results.jsonl"


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Each chart's figure, kept instead of closed, by file name."""
    kept: dict[str, Any] = {}

    def keep(plt: Any, fig: Any, path: Path) -> bool:
        fig.canvas.draw()
        kept[path.name] = fig
        return True

    monkeypatch.setattr(plots, "_save", keep)
    rows = report.read_jsonl(CANNED)
    # A second kafkalite run with other figures, so the bars have a spread to show.
    extra = [
        {**r, "run_index": 1, "produce_mb_s": r["produce_mb_s"] * 0.5}
        for r in rows
        if r.get("kind") == "result" and r["system"] == "kafkalite" and r["phase"] == "produce"
    ]
    assert plots.write_plots(tmp_path, rows + extra)
    return kept


def test_each_system_has_one_colour_in_every_chart(figures: dict[str, Any]) -> None:
    seen: dict[str, set[str]] = {}
    for fig in figures.values():
        for ax in fig.axes:
            for line in ax.get_lines():
                system = line.get_label().split(" ")[0]
                if system in ("kafkalite", "kafka"):
                    seen.setdefault(system, set()).add(to_hex(line.get_color()))
    bars = figures["bars-per-profile.png"].axes[0]
    for handle in bars.get_legend().legend_handles:
        if handle.get_label() in ("kafkalite", "kafka"):
            seen.setdefault(handle.get_label(), set()).add(to_hex(handle.get_facecolor()))
    assert seen["kafkalite"] == {to_hex(plots.colour("kafkalite"))}
    assert seen["kafka"] == {to_hex(plots.colour("kafka"))}
    assert seen["kafkalite"] != seen["kafka"]


def test_profile_none_is_labelled_no_profile(figures: dict[str, Any]) -> None:
    ax = figures["bars-per-profile.png"].axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels and all(label.startswith("no profile\n") for label in labels), labels


def test_legends_sit_outside_the_plotting_area(figures: dict[str, Any]) -> None:
    for name, fig in figures.items():
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None or name == "throughput-vs-offered-load.png":
                continue
            box = legend.get_window_extent(renderer)
            assert box.x0 >= ax.get_window_extent(renderer).x1, name


def test_limits_are_lines_and_bars_show_the_spread(figures: dict[str, Any]) -> None:
    lim = report.limits(report.read_jsonl(CANNED))
    for name in ("bars-per-profile.png", "throughput-over-time.png"):
        ax = figures[name].axes[0]
        levels = {
            round(line.get_ydata()[0], 1) for line in ax.get_lines() if "limit" in line.get_label()
        }
        assert round(lim["disk_buffered_mb_s"], 1) in levels, (name, levels)
        assert round(lim["net_plain_mb_s"], 1) in levels, (name, levels)
    bars = figures["bars-per-profile.png"].axes[0]
    # One whisker: kafkalite's produce, the only bar with two runs, from min to max.
    whiskers = [c for c in bars.containers if isinstance(c, BarContainer) and c.errorbar]
    assert len(whiskers) == 1
    assert whiskers[0].patches[0].get_facecolor()[:3] == to_rgb(plots.colour("kafkalite"))
