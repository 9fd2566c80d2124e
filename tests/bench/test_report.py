"""Report, perf-test lines, final JSON and plots from a canned results.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="pip install '.[bench]'")

from kafkalite.bench import java_driver, plots, report

CANNED = Path(__file__).parent / "data" / "canned-results.jsonl"
KEYS = {
    "produce_mb_s",
    "consume_mb_s",
    "kafka_produce_mb_s",
    "kafka_consume_mb_s",
    "produce_ratio_vs_kafka",
    "consume_ratio_vs_kafka",
    "disk_limit_mb_s",
    "net_limit_mb_s",
}


def test_headline_from_canned_rows() -> None:
    rows = report.read_jsonl(CANNED)
    head = report.headline(rows, ["kafkalite", "kafka"])
    assert KEYS <= set(head)
    assert head["produce_ratio_vs_kafka"] == round(
        head["produce_mb_s"] / head["kafka_produce_mb_s"], 2
    ) or (
        abs(head["produce_ratio_vs_kafka"] - head["produce_mb_s"] / head["kafka_produce_mb_s"])
        < 0.01
    )
    json.dumps(head, allow_nan=False)  # no NaN in the final line


def test_perf_test_line_shape() -> None:
    rows = report.read_jsonl(CANNED)
    line = report.perf_test_line(report.system_summary(rows, "kafka"))
    assert line.startswith("kafka: ") and " records sent, " in line
    for part in (
        "records/sec (",
        " MB/sec), ",
        "ms avg latency",
        "ms max latency",
        "ms 50th",
        "ms 95th",
        "ms 99th",
        "ms 99.9th.",
    ):
        assert part in line


def test_markdown_and_plots(tmp_path: Path) -> None:
    rows = report.read_jsonl(CANNED)
    made = plots.write_plots(tmp_path, rows)
    assert "throughput-over-time.png" in made and "latency-percentiles.png" in made
    for name in made:
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    path = report.write_report(tmp_path, rows, ["kafkalite", "kafka"], made)
    text = path.read_text()
    assert "| produce MB/s |" in text and "fio sequential" in text and "iperf3 -Z" in text
    assert json.loads((tmp_path / "summary.json").read_text()).keys() >= KEYS


def test_missing_system_gives_nulls() -> None:
    rows = report.read_jsonl(CANNED)
    head = report.headline(rows, ["kafkalite"])
    assert head["kafka_produce_mb_s"] is None and head["produce_ratio_vs_kafka"] is None


def test_java_tool_output_parsers() -> None:
    out = (
        "102194 records sent, 20422.5 records/sec (19.94 MB/sec), 602.6 ms avg latency, "
        "1804.0 ms max latency.\n"
        "200000 records sent, 30175.0 records/sec (29.47 MB/sec), 596.74 ms avg latency, "
        "1804.00 ms max latency, 630 ms 50th, 874 ms 95th, 890 ms 99th, 900 ms 99.9th.\n"
    )
    p = java_driver.parse_producer_perf(out)
    assert (
        p["records"] == 200000
        and p["produce_mb_s"] == 29.47
        and p["publish_latency"]["p99_ms"] == 890
    )
    c = java_driver.parse_consumer_perf(
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-11-23 09:01:42:287, 2026-11-23 09:01:48:542, 195.3125, 31.2250, 200000, 31974.4205, "
        "2627, 3628, 53.8348, 55126.7916\n"
    )
    assert c["records"] == 200000 and c["consume_mb_s"] == 53.8348
    e = java_driver.parse_end_to_end(
        "Avg latency: 1.1349 ms\nPercentiles: 50th = 0, 99th = 8, 99.9th = 16\n"
    )
    assert e["e2e_latency"]["p99_ms"] == 8


def test_headline_reports_broker_cpu_and_the_cost_of_replication() -> None:
    rows = report.read_jsonl(CANNED)
    extra = []
    for r in rows:
        if r.get("kind") == "result" and r.get("phase") == "produce":
            r["broker_cpu_s_per_gib"] = 10.0 if r["system"] == "kafkalite" else 20.0
            r["replication_factor"] = 3
            extra.append(
                {**r, "phase": "baseline-produce", "replication_factor": 1,
                 "produce_mb_s": r["produce_mb_s"] * 2}
            )  # fmt: skip
    head = report.headline(rows + extra, ["kafkalite", "kafka"])
    assert head["broker_cpu_s_per_gib"] == 10.0 and head["kafka_broker_cpu_s_per_gib"] == 20.0
    assert head["rf3_vs_rf1_throughput"] == 0.5 and head["kafka_rf3_vs_rf1_throughput"] == 0.5
    assert (
        head["rf1_produce_mb_s"] == round(2 * head["rf3_produce_mb_s"], 2)
        or abs(head["rf1_produce_mb_s"] - 2 * head["rf3_produce_mb_s"]) < 0.02
    )
    json.dumps(head, allow_nan=False)
