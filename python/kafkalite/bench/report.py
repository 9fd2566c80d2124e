"""From results.jsonl rows to the summary: perf-test lines, the final JSON and report.md."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _median(values: Iterable[float]) -> float:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(statistics.median(vals)) if vals else math.nan


def _rows(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def limits(rows: list[dict[str, Any]]) -> dict[str, float]:
    def lim(tool: str, mode: str) -> float:
        return _median(r["mb_s"] for r in _rows(rows, kind="limit", tool=tool, mode=mode))

    return {
        "disk_buffered_mb_s": lim("fio", "buffered"),
        "disk_direct_mb_s": lim("fio", "direct"),
        "net_plain_mb_s": lim("iperf3", "plain"),
        "net_zerocopy_mb_s": lim("iperf3", "zerocopy"),
    }


def system_summary(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    """Medians over runs of one system's confluent-kafka phases."""
    res = _rows(rows, kind="result", system=system, driver="confluent-kafka")
    prod = [r for r in res if r["phase"] in ("produce", "backlog-produce")]
    cons = [r for r in res if r["phase"] == "catch-up"]
    java = _rows(rows, kind="result", system=system, driver="kafka-java-tools")
    out: dict[str, Any] = {
        "system": system,
        "runs": len(prod),
        "produce_mb_s": _median(r["produce_mb_s"] for r in prod),
        "produce_records_per_s": _median(r["produce_records_per_s"] for r in prod),
        "records": int(_median(r["records"] for r in prod)) if prod else 0,
        "consume_mb_s": _median(r["consume_mb_s"] for r in cons),
        "consume_records_per_s": _median(r["consume_records_per_s"] for r in cons),
        "produce_errors": sum(r.get("errors", 0) for r in prod),
        "consume_complete": all(r.get("complete", False) for r in cons),
    }
    for key in ("avg_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"):
        out[f"publish_{key}"] = _median(
            r["publish_latency"][key] for r in prod if "publish_latency" in r
        )
        out[f"e2e_{key}"] = _median(r["e2e_latency"][key] for r in prod if "e2e_latency" in r)
    cpu = [c for r in prod + cons for c in r.get("client_cpu_per_process", [])]
    out["client_cpu_max"] = max(cpu) if cpu else math.nan
    out["broker_cpu_s_per_gib"] = _median(r.get("broker_cpu_s_per_gib") for r in prod)
    out["broker_cpu_s_per_gib_consume"] = _median(r.get("broker_cpu_s_per_gib") for r in cons)
    cost = _rows(rows, kind="broker-cost", system=system)
    for key in ("peak_rss_mib", "steady_rss_mib", "max_fds", "max_threads"):
        pick = max if key.startswith(("peak", "max")) else _median
        vals = [r[key] for r in cost if r.get(key) is not None]
        out[key] = pick(vals) if vals else math.nan
    out["replication_factor"] = prod[-1].get("replication_factor", 1) if prod else 1
    baseline = [r for r in res if r["phase"] == "baseline-produce"]
    if baseline:
        out["baseline_replication_factor"] = baseline[-1]["replication_factor"]
        out["baseline_produce_mb_s"] = _median(r["produce_mb_s"] for r in baseline)
        out["baseline_publish_p99_ms"] = _median(r["publish_latency"]["p99_ms"] for r in baseline)
    sweep = [r for r in res if r["phase"] == "fixed-rate"]
    out["sweep"] = [
        {
            "rate_fraction": r.get("rate_fraction"),
            "offered_msgs_s": r["offered_msgs_s"],
            "achieved_mb_s": r["produce_mb_s"],
            "rate_reference": r.get("rate_reference", "own max"),
            **{
                f"{kind}_{p}_ms": r.get(f"{kind}_latency", {}).get(f"{p}_ms", math.nan)
                for kind in ("publish", "e2e")
                for p in ("p50", "p99", "p999")
            },
        }
        for r in sweep
    ]
    jp = [r for r in java if r["phase"] == "java-produce"]
    jc = [r for r in java if r["phase"] == "java-consume"]
    je = [r for r in java if r["phase"] == "java-e2e"]
    if jp:
        out["java_broker_cpu_s_per_gib_produce"] = _median(
            r.get("broker_cpu_s_per_gib") for r in jp
        )
        out["java_produce_mb_s"] = _median(r["produce_mb_s"] for r in jp)
        out["java_publish_p99_ms"] = _median(r["publish_latency"]["p99_ms"] for r in jp)
        out["java_summary_line"] = jp[-1]["summary_line"]
    if jc:
        out["java_consume_mb_s"] = _median(r["consume_mb_s"] for r in jc)
        out["java_broker_cpu_s_per_gib_consume"] = _median(
            r.get("broker_cpu_s_per_gib") for r in jc
        )
    if je:
        out["java_e2e_p99_ms"] = _median(r["e2e_latency"]["p99_ms"] for r in je)
    notes = _rows(rows, kind="system", system=system)
    out["note"] = notes[-1].get("note", "") if notes else ""
    return out


def perf_test_line(s: dict[str, Any]) -> str:
    """The line kafka-producer-perf-test prints, for one system's produce phase."""
    return (
        f"{s['system']}: {s['records']} records sent, {s['produce_records_per_s']:.1f} records/sec "
        f"({s['produce_mb_s']:.2f} MB/sec), {s['publish_avg_ms']:.2f} ms avg latency, "
        f"{s['publish_max_ms']:.2f} ms max latency, {s['publish_p50_ms']:.2f} ms 50th, "
        f"{s['publish_p95_ms']:.2f} ms 95th, {s['publish_p99_ms']:.2f} ms 99th, "
        f"{s['publish_p999_ms']:.2f} ms 99.9th."
    )


def _ratio(a: float, b: float) -> float:
    if not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return round(a / b, 3)


def _clean(v: Any) -> Any:
    # JSON has no NaN: missing figures are null.
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 2)
    return v


def broker_cost(mine: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """What each broker spent, and kafkalite's share of Kafka's: CPU seconds per GiB
    produced and consumed (all broker processes, user + system), memory, fds and threads.
    The `_ratio_vs_kafka` figures are kafkalite / Kafka (lower is cheaper);
    `cpu_efficiency_ratio_vs_kafka` is the other way round, Kafka's CPU per GiB moved
    (produced plus consumed) over kafkalite's: how many times less CPU kafkalite needs."""
    nan = math.nan
    out: dict[str, Any] = {}
    keys = {
        "broker_cpu_s_per_gib_produce": "broker_cpu_s_per_gib",
        "broker_cpu_s_per_gib_consume": "broker_cpu_s_per_gib_consume",
        "java_broker_cpu_s_per_gib_produce": "java_broker_cpu_s_per_gib_produce",
        "java_broker_cpu_s_per_gib_consume": "java_broker_cpu_s_per_gib_consume",
        "broker_peak_rss_mib": "peak_rss_mib",
        "broker_steady_rss_mib": "steady_rss_mib",
        "broker_max_fds": "max_fds",
        "broker_max_threads": "max_threads",
    }
    for name, key in keys.items():
        out[name] = mine.get(key, nan)
        out[f"kafka_{name}"] = ref.get(key, nan)
    for kind in ("produce", "consume"):
        out[f"cpu_per_gib_{kind}_ratio_vs_kafka"] = _ratio(
            out[f"broker_cpu_s_per_gib_{kind}"], out[f"kafka_broker_cpu_s_per_gib_{kind}"]
        )
    ours = out["broker_cpu_s_per_gib_produce"] + out["broker_cpu_s_per_gib_consume"]
    theirs = out["kafka_broker_cpu_s_per_gib_produce"] + out["kafka_broker_cpu_s_per_gib_consume"]
    out["cpu_efficiency_ratio_vs_kafka"] = _ratio(theirs, ours)
    return out


def headline(rows: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    lim = limits(rows)
    mine = system_summary(rows, "kafkalite") if "kafkalite" in systems else {}
    ref = system_summary(rows, "kafka") if "kafka" in systems else {}
    nan = math.nan
    out = {
        "produce_mb_s": mine.get("produce_mb_s", nan),
        "consume_mb_s": mine.get("consume_mb_s", nan),
        "kafka_produce_mb_s": ref.get("produce_mb_s", nan),
        "kafka_consume_mb_s": ref.get("consume_mb_s", nan),
        "produce_ratio_vs_kafka": _ratio(
            mine.get("produce_mb_s", nan), ref.get("produce_mb_s", nan)
        ),
        "consume_ratio_vs_kafka": _ratio(
            mine.get("consume_mb_s", nan), ref.get("consume_mb_s", nan)
        ),
        "disk_limit_mb_s": lim["disk_buffered_mb_s"],
        "net_limit_mb_s": lim["net_plain_mb_s"],
        "publish_p99_ms": mine.get("publish_p99_ms", nan),
        "kafka_publish_p99_ms": ref.get("publish_p99_ms", nan),
        "e2e_p99_ms": mine.get("e2e_p99_ms", nan),
        "kafka_e2e_p99_ms": ref.get("e2e_p99_ms", nan),
    }
    out["broker_cpu_s_per_gib"] = mine.get("broker_cpu_s_per_gib", nan)
    out["kafka_broker_cpu_s_per_gib"] = ref.get("broker_cpu_s_per_gib", nan)
    out.update(broker_cost(mine, ref))
    # The cost of replication: produce throughput at the workload's replication factor
    # over the baseline's (e.g. RF=3 / RF=1), for each system.
    for prefix, s in (("", mine), ("kafka_", ref)):
        if "baseline_produce_mb_s" in s:
            rf, brf = s["replication_factor"], s["baseline_replication_factor"]
            out[f"{prefix}rf{rf}_produce_mb_s"] = s["produce_mb_s"]
            out[f"{prefix}rf{brf}_produce_mb_s"] = s["baseline_produce_mb_s"]
            out[f"{prefix}rf{rf}_vs_rf{brf}_throughput"] = _ratio(
                s["produce_mb_s"], s["baseline_produce_mb_s"]
            )
    if "tansu" in systems:
        third = system_summary(rows, "tansu")
        out["tansu_produce_mb_s"] = third["produce_mb_s"]
        out["tansu_consume_mb_s"] = third["consume_mb_s"]
    out["produce_fraction_of_disk_limit"] = _ratio(out["produce_mb_s"], out["disk_limit_mb_s"])
    out["consume_fraction_of_net_limit"] = _ratio(out["consume_mb_s"], lim["net_zerocopy_mb_s"])
    return {k: _clean(v) for k, v in out.items()}


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _table(header: list[str], body: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return [*out, ""]


def _replication_rows(head: dict[str, Any]) -> list[list[Any]]:
    """Produce MB/s per replication factor and their ratio, when a baseline ran."""
    rows = []
    for key in sorted(k for k in head if k.endswith("_produce_mb_s") and k.startswith("rf")):
        rows.append([f"produce MB/s at {key.split('_')[0].upper()}", _fmt(head[key]),
                     _fmt(head.get(f"kafka_{key}")), ""])  # fmt: skip
    for key in (k for k in head if k.startswith("rf") and k.endswith("_throughput")):
        label = key.removesuffix("_throughput").replace("_vs_", " / ").upper()
        rows.append([f"throughput {label} (the cost of replication)", _fmt(head[key], 2),
                     _fmt(head.get(f"kafka_{key}"), 2), ""])  # fmt: skip
    return rows


def _cost_rows(head: dict[str, Any], ratio: Any) -> list[list[Any]]:
    """The broker's own cost, one headline row per figure."""
    figures = [
        ("broker CPU s per GiB produced (all broker processes)", "broker_cpu_s_per_gib_produce"),
        ("broker CPU s per GiB consumed (catch-up read)", "broker_cpu_s_per_gib_consume"),
        ("broker CPU s per GiB, Java ProducerPerformance", "java_broker_cpu_s_per_gib_produce"),
        ("broker CPU s per GiB, Java ConsumerPerformance", "java_broker_cpu_s_per_gib_consume"),
        ("broker peak RSS MiB", "broker_peak_rss_mib"),
        ("broker steady RSS MiB (produce phase)", "broker_steady_rss_mib"),
        ("broker open fds (max)", "broker_max_fds"),
        ("broker threads (max)", "broker_max_threads"),
    ]
    return [
        [
            label,
            _fmt(head.get(key), 2),
            _fmt(head.get(f"kafka_{key}"), 2),
            ratio(key, f"kafka_{key}"),
        ]
        for label, key in figures
        if key in head
    ]


def _pcts(s: dict[str, Any], prefix: str) -> str:
    return " / ".join(_fmt(s[f"{prefix}_{p}_ms"], 2) for p in ("p50", "p99", "p999"))


def markdown(rows: list[dict[str, Any]], systems: list[str], plots: list[str]) -> str:
    run = next((r for r in rows if r.get("kind") == "run"), {})
    host = run.get("host", {})
    lim = limits(rows)
    sums = [system_summary(rows, s) for s in systems]
    head = headline(rows, systems)
    spec = run.get("workload_spec", {})
    nan = math.nan

    def ratio(a: str, b: str) -> str:
        return _fmt(_ratio(head[a] if head[a] is not None else nan, head[b] or nan), 2)

    lines = [
        f"# Benchmark: {run.get('workload', '?')} ({'quick' if run.get('quick') else 'full'} run)",
        "",
        f"Run `{run.get('run_id', '?')}`, hardware profile `{run.get('profile', 'none')}`, "
        f"{host.get('cpus', '?')} CPUs, {host.get('mem_gib', '?')} GiB, kernel "
        f"{host.get('kernel', '?')}. Systems: {', '.join(systems)}. All brokers are separate "
        "processes on the same machine as their clients; MB means MiB (2^20 bytes).",
        "",
        "## Workload",
        "",
        *_table(["field", "value"], [[k, v] for k, v in spec.items()]),
        "## Headline",
        "",
        *_table(
            ["figure", "kafkalite", "Kafka", "kafkalite / Kafka"],
            [
                [
                    "produce MB/s",
                    _fmt(head["produce_mb_s"]),
                    _fmt(head["kafka_produce_mb_s"]),
                    ratio("produce_mb_s", "kafka_produce_mb_s"),
                ],
                [
                    "consume MB/s (catch-up read from offset 0)",
                    _fmt(head["consume_mb_s"]),
                    _fmt(head["kafka_consume_mb_s"]),
                    ratio("consume_mb_s", "kafka_consume_mb_s"),
                ],
                [
                    "publish p99 ms (send -> ack)",
                    _fmt(head["publish_p99_ms"], 2),
                    _fmt(head["kafka_publish_p99_ms"], 2),
                    ratio("publish_p99_ms", "kafka_publish_p99_ms"),
                ],
                [
                    "end-to-end p99 ms (consume time - record timestamp)",
                    _fmt(head["e2e_p99_ms"], 2),
                    _fmt(head["kafka_e2e_p99_ms"], 2),
                    ratio("e2e_p99_ms", "kafka_e2e_p99_ms"),
                ],
                *_cost_rows(head, ratio),
                *_replication_rows(head),
            ],
        ),
        "## The machine's limits (same run)",
        "",
        *_table(
            ["limit", "MB/s"],
            [
                [
                    "fio sequential 1 MiB write, buffered (data dir filesystem)",
                    _fmt(lim["disk_buffered_mb_s"]),
                ],
                ["fio sequential 1 MiB write, O_DIRECT", _fmt(lim["disk_direct_mb_s"])],
                ["iperf3, one TCP stream", _fmt(lim["net_plain_mb_s"])],
                ["iperf3 -Z (sendfile)", _fmt(lim["net_zerocopy_mb_s"])],
            ],
        ),
        "## Per system (medians over runs)",
        "",
    ]
    body = []
    for s in sums:
        body.append(
            [
                s["system"],
                _fmt(s["produce_mb_s"]),
                _fmt(_ratio(s["produce_mb_s"], lim["disk_buffered_mb_s"]), 2),
                _fmt(_ratio(s["produce_mb_s"], lim["net_plain_mb_s"]), 2),
                _fmt(s["consume_mb_s"]),
                _fmt(_ratio(s["consume_mb_s"], lim["net_zerocopy_mb_s"]), 2),
                _pcts(s, "publish"),
                _pcts(s, "e2e"),
                _fmt(s["client_cpu_max"], 2),
                s["note"],
            ]
        )
    lines += _table(
        [
            "system",
            "produce MB/s",
            "of disk (buffered)",
            "of net",
            "consume MB/s",
            "of net (-Z)",
            "publish p50/p99/p99.9 ms",
            "e2e p50/p99/p99.9 ms",
            "busiest client CPU",
            "note",
        ],
        body,
    )
    lines += ["kafka-producer-perf-test style lines (confluent-kafka driver):", "", "```"]
    lines += [perf_test_line(s) for s in sums if s["runs"]]
    lines += ["```", ""]
    if any("java_produce_mb_s" in s for s in sums):
        lines += ["## Kafka's own Java tools against each system", ""]
        lines += _table(
            [
                "system",
                "ProducerPerformance MB/s",
                "p99 ms",
                "ConsumerPerformance fetch MB/s",
                "EndToEndLatency p99 ms",
            ],
            [
                [
                    s["system"],
                    _fmt(s.get("java_produce_mb_s")),
                    _fmt(s.get("java_publish_p99_ms")),
                    _fmt(s.get("java_consume_mb_s")),
                    _fmt(s.get("java_e2e_p99_ms")),
                ]
                for s in sums
            ],
        )
    if any(s["sweep"] for s in sums):
        lines += [
            "## Fixed-rate latency sweep",
            "",
            "Latency counts from each record's intended send time, so a stall cannot hide the "
            "records it delayed (no coordinated omission).",
            "",
        ]
        lines += _table(
            [
                "system",
                "fraction of",
                "offered msg/s",
                "achieved MB/s",
                "publish p50 / p99 / p99.9 ms",
                "e2e p50 / p99 / p99.9 ms",
            ],
            [
                [
                    s["system"],
                    f"{_fmt(p['rate_fraction'], 2)} of {p['rate_reference']}",
                    _fmt(p["offered_msgs_s"], 0),
                    _fmt(p["achieved_mb_s"]),
                    _pcts(p, "publish"),
                    _pcts(p, "e2e"),
                ]
                for s in sums
                for p in s["sweep"]
            ],
        )
    prof = [r for r in rows if r.get("kind") == "profile"]
    if prof:
        lines += ["## Hardware profile: specified vs achieved", ""]
        lines += _table(
            ["what", "specified", "achieved"],
            [[r["what"], r["specified"], _fmt(r["achieved"])] for r in prof],
        )
    errors = [r for r in rows if r.get("kind") == "error"]
    if errors:
        lines += ["## Failures (recorded, the run went on)", ""]
        for r in errors:
            last = (r.get("error") or "").strip().splitlines() or ["?"]
            lines.append(f"- {r.get('system')} {r.get('phase', 'run')}: `{last[-1][:200]}`")
        lines.append("")
    lines += ["## Broker settings", ""]
    shown = set()
    for r in rows:
        if r.get("kind") == "system" and r["system"] not in shown:
            shown.add(r["system"])
            settings = ", ".join(f"`{k}={v}`" for k, v in r["settings"].items())
            lines.append(f"- **{r['system']}**: {settings}")
    lines += [
        "",
        "## How it was measured",
        "",
        "- Clients: confluent-kafka (librdkafka) in separate processes, the same settings against "
        "every system (acks per workload, linger.ms=5, batch.size=1 MiB, 32 MiB client queue, "
        "no idempotence). "
        "'busiest client CPU' is CPU seconds per wall second of the busiest client process: "
        "well below 1.0 means the client waited on the broker.",
        "- Produce MB/s: bytes acknowledged inside the measurement window (after warm-up). "
        "Consume MB/s: a catch-up read of everything produced, from offset 0, by fresh consumers "
        "(page cache hot).",
        "- Publish latency: send() -> acknowledgement; end-to-end: consume time - record "
        "CreateTime (millisecond timestamps, so sub-millisecond figures round up). Histograms "
        "have 1 % buckets; percentiles are bucket upper edges.",
        "- Before each system, 1.25 GiB is written and deleted on the data filesystem so every "
        "system starts on touched memory (this VM serves first touches slowly).",
        "- fsync is not part of any figure: neither broker fsyncs per write by default, and fio "
        "runs without fsync.",
        "",
    ]
    if plots:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines)


def write_report(
    out_dir: Path, rows: list[dict[str, Any]], systems: list[str], plots: list[str]
) -> Path:
    path = out_dir / "report.md"
    path.write_text(markdown(rows, systems, plots))
    (out_dir / "summary.json").write_text(json.dumps(headline(rows, systems), indent=2) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not JSON: {e}") from None
    return rows
