"""What the Spark bench scripts share: a local SparkSession with Spark's own Kafka connector
when Maven can fetch it, the per-round ratio against that connector, and the rows/s plot."""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One colour per system in every bench plot (kafkalite.bench.plots uses the same).
COLOURS = {
    "kafkalite": "#1f77b4",
    "spark_kafka": "#ff7f0e",
    "spark_kafka_defaults": "#ffbb78",
    "python_sink_floor": "#7f7f7f",
    "python_source_floor": "#7f7f7f",
}


def start_spark(app: str, master: str, say: Callable[[str], None]) -> tuple[Any, str | None]:
    """A local SparkSession with kafkalite's data source registered and, when it can be
    fetched, Spark's Kafka connector on the class path. Returns the session and, when the
    connector is missing, why."""
    import pyspark
    from pyspark.sql import SparkSession

    from kafkalite.spark import register
    from kafkalite.spark.jvm_connector import ConnectorUnavailable, cache_dir, connector_jars

    if not (cache_dir(pyspark.__version__) / ".complete").exists():
        say(
            f"fetching Spark's Kafka connector for Spark {pyspark.__version__} with Maven "
            f"into {cache_dir(pyspark.__version__)} (first run only; a minute or two)"
        )
    try:
        jars, unavailable = connector_jars(pyspark.__version__), None
    except ConnectorUnavailable as exc:
        jars, unavailable = [], str(exc)
        say(f"Spark's Kafka connector unavailable: {exc}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark binds to loopback, and so needs no resolvable host name.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(str(p) for p in jars))
    say(f"starting Spark ({master})")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark, unavailable


def process_cpu_seconds() -> dict[str, float] | None:
    """CPU seconds (user + system) used so far by this process (`driver`: the bench and the
    embedded broker it runs), the Spark JVM it started (`spark_jvm`) and that JVM's Python
    workers (`python_workers`), read from /proc; None where there is no /proc. A worker that
    exits between two readings takes its seconds with it (Spark reuses workers)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    parents: dict[int, int] = {}
    stats: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        fields = rest.split()
        parents[int(entry.name)] = int(fields[1])
        stats[int(entry.name)] = (comm, (int(fields[11]) + int(fields[12])) / tick)
    me = os.getpid()
    out = {"driver": stats[me][1], "spark_jvm": 0.0, "python_workers": 0.0}
    jvms = {pid for pid, parent in parents.items() if parent == me and stats[pid][0] == "java"}
    for pid in jvms:
        out["spark_jvm"] += stats[pid][1]
    # Workers are the JVM's children (the daemon) and theirs (the forked workers).
    level = {pid for pid, parent in parents.items() if parent in jvms}
    while level:
        out["python_workers"] += sum(stats[pid][1] for pid in level)
        level = {pid for pid, parent in parents.items() if parent in level}
    return out


def ratios(
    kind: str, ours: list[float], theirs: list[float], against: str | None = None
) -> dict[str, Any]:
    """Rows/s ratio per round (their seconds over ours), its median and spread, named
    `<kind>_ratio_vs_spark_kafka`, `<kind>_ratio_min`, ...; against another system
    `<kind>_ratio_vs_<against>`, `<kind>_ratio_vs_<against>_min`, ..."""
    per_round = sorted(t / o for o, t in zip(ours, theirs, strict=True))
    name = f"{kind}_ratio_vs_{against or 'spark_kafka'}"
    spread = f"{name}_" if against else f"{kind}_ratio_"
    return {
        name: round(statistics.median(per_round), 2),
        f"{spread}min": round(per_round[0], 2),
        f"{spread}max": round(per_round[-1], 2),
        f"{spread}per_round": [round(r, 2) for r in per_round],
    }


def _rate(rows_per_sec: float) -> str:
    if rows_per_sec >= 1e6:
        return f"{rows_per_sec / 1e6:.2f}M rows/s"
    if rows_per_sec >= 1e4:
        return f"{rows_per_sec / 1e3:.0f}k rows/s"
    return f"{rows_per_sec:,.0f} rows/s"


def plot_rows_per_sec(
    result: dict[str, Any],
    names: list[str],
    labels: dict[str, str],
    kind: str,
    rows: int,
    path: Path,
    say: Callable[[str], None],
) -> bool:
    """Rows/s per system: a bar at the median with its figure, and a dot per run (the
    spread). `kind` is "read" or "write"; `result` holds `master`,
    `<name>_seconds`, `<name>_rows_per_sec` and, when measured, the ratios."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        say("matplotlib is missing (pip install '.[bench]'): no plot")
        return False
    fig, ax = plt.subplots(figsize=(1.9 * len(names) + 1.5, 4))
    for x, name in enumerate(names):
        median = result[f"{name}_rows_per_sec"]
        ax.bar(x, median, color=COLOURS.get(name, "#2ca02c"), alpha=0.8, width=0.6)
        runs = [rows / s for s in result[f"{name}_seconds"]]
        ax.scatter([x] * len(runs), runs, color="black", s=14, zorder=3)
        # The figure inside the bar, clear of the dots at and above its top.
        ax.text(
            x,
            median / 2,
            _rate(median),
            ha="center",
            va="center",
            color="white",
            fontweight="bold",
        )
    ax.set_xticks(range(len(names)), [labels.get(n, n) for n in names])
    ax.set_ylabel("rows/s (bar: median; dots: each run)")
    title = f"Spark {kind}, {rows:,} rows, {result['master']}"
    if f"{kind}_ratio_vs_spark_kafka" in result:
        title += (
            f"\nkafkalite / Spark Kafka: {result[f'{kind}_ratio_vs_spark_kafka']}x "
            f"(rounds {result[f'{kind}_ratio_min']}-{result[f'{kind}_ratio_max']}x)"
        )
    defaults = f"{kind}_ratio_vs_spark_kafka_defaults"
    if defaults in result:
        title += (
            f"; vs its defaults {result[defaults]}x "
            f"({result[f'{defaults}_min']}-{result[f'{defaults}_max']}x)"
        )
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
