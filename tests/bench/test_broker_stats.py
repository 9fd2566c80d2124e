"""The broker cost figures: /proc sampling of real processes, and how the report turns the
rows into the headline's CPU-per-GiB ratios."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from kafkalite.bench import pinning, report
from kafkalite.bench.broker_stats import ProcessSampler, cpu_seconds, sample


def test_samples_a_real_process_by_phase() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nx = bytearray(64 << 20)\ntime.sleep(30)"]
    )
    try:
        time.sleep(1.0)
        sampler = ProcessSampler(lambda: [child.pid], interval_s=0.05).start()
        sampler.mark("produce")
        time.sleep(0.5)
        sampler.stop()
        summary = sampler.summary()
        assert summary["steady_rss_mib"] >= 60, summary  # the child's 64 MiB buffer
        assert summary["max_threads"] >= 1 and summary["max_fds"] >= 3
        assert "produce" in {s.phase for s in sampler.samples}
    finally:
        child.kill()
        child.wait()
    assert sample([child.pid], "gone") is None
    assert cpu_seconds([child.pid]) == 0.0


def test_cpu_seconds_counts_user_and_system_time() -> None:
    before = cpu_seconds([os.getpid()])
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert cpu_seconds([os.getpid()]) - before >= 0.2


def test_split_keeps_broker_and_clients_apart() -> None:
    cpus = pinning.split()
    if len(os.sched_getaffinity(0)) < 2:
        assert cpus is None
        return
    assert cpus is not None
    assert cpus.broker and cpus.clients and not cpus.broker & cpus.clients
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
        preexec_fn=pinning.preexec(cpus.clients),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(sorted(cpus.clients))


def _rows(system: str, produce: float, consume: float) -> list[dict]:
    lat = {k: 1.0 for k in ("avg_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")}
    common = {"kind": "result", "system": system, "driver": "confluent-kafka"}
    return [
        {**common, "phase": "warm-up", "produce_mb_s": 1, "produce_records_per_s": 1,
         "records": 1, "publish_latency": lat, "broker_cpu_s_per_gib": 100.0},
        {**common, "phase": "produce", "produce_mb_s": 100, "produce_records_per_s": 1e5,
         "records": 10, "publish_latency": lat, "broker_cpu_s_per_gib": produce},
        {**common, "phase": "catch-up", "consume_mb_s": 300, "consume_records_per_s": 3e5,
         "complete": True, "broker_cpu_s_per_gib": consume},
        {"kind": "broker-cost", "system": system, "peak_rss_mib": 30.0, "steady_rss_mib": 25.0,
         "max_fds": 50, "max_threads": 8},
    ]  # fmt: skip


def test_headline_gives_cpu_per_gib_ratios_without_the_warm_up() -> None:
    rows = _rows("kafkalite", 1.0, 0.25) + _rows("kafka", 8.0, 1.0)
    head = report.headline(rows, ["kafkalite", "kafka"])
    assert head["broker_cpu_s_per_gib_produce"] == 1.0
    assert head["kafka_broker_cpu_s_per_gib_produce"] == 8.0
    assert head["cpu_per_gib_produce_ratio_vs_kafka"] == 0.12
    assert head["cpu_per_gib_consume_ratio_vs_kafka"] == 0.25
    assert head["cpu_efficiency_ratio_vs_kafka"] == 7.2  # (8 + 1) / (1 + 0.25)
    assert head["broker_peak_rss_mib"] == 30.0 and head["broker_max_threads"] == 8
    assert "broker CPU s per GiB consumed" in report.markdown(rows, ["kafkalite", "kafka"], [])
