"""Kafka's own Java perf tools, from the fetched jars, against any system under test:
ProducerPerformance (kafka-producer-perf-test), ConsumerPerformance
(kafka-consumer-perf-test) and EndToEndLatency. A second, independent client: if both
clients see the same ratio between systems, the client is not what is being measured.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

from kafkalite.bench import kafka_ref, pinning
from kafkalite.bench.topics import create_topics
from kafkalite.bench.workload import Workload

TOOL_TIMEOUT_S = 600

_PERF = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbs>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th"
)


GIB = 1 << 30


def _run(libs, main_class: str, args: list[str], cpus: frozenset[int] | None = None) -> str:
    done = subprocess.run(
        kafka_ref.tool_command(libs, main_class, args),
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
        preexec_fn=pinning.preexec(cpus),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} failed: {(done.stdout + done.stderr)[-1500:]}")
    return done.stdout


def parse_producer_perf(out: str) -> dict[str, Any]:
    found = list(_PERF.finditer(out))
    m = found[-1] if found else None  # the last line is the final summary
    if m is None:
        raise ValueError(f"no ProducerPerformance summary in: {out[-500:]}")
    return {
        "records": int(m["records"]),
        "produce_records_per_s": float(m["rps"]),
        # The tool's "MB" is MiB (bytes / 1024 / 1024).
        "produce_mb_s": float(m["mbs"]),
        "publish_latency": {
            "avg_ms": float(m["avg"]),
            "p50_ms": float(m["p50"]),
            "p95_ms": float(m["p95"]),
            "p99_ms": float(m["p99"]),
            "p999_ms": float(m["p999"]),
            "max_ms": float(m["max"]),
        },
        "summary_line": m.group(0),
    }


def parse_consumer_perf(out: str) -> dict[str, Any]:
    lines = [line for line in out.splitlines() if line and line[0].isdigit()]
    if not lines:
        raise ValueError(f"no ConsumerPerformance result in: {out[-500:]}")
    cols = [c.strip() for c in lines[-1].split(",")]
    # start.time, end.time, MB, MB.sec, nMsg, nMsg.sec, rebalance.ms, fetch.ms, fetch.MB.sec, ...
    return {
        "records": int(cols[4]),
        "consume_mb_s_incl_join": float(cols[3]),
        "consume_mb_s": float(cols[8]),  # fetch time only: excludes the group join
        "consume_records_per_s": float(cols[9]),
        "rebalance_ms": float(cols[6]),
    }


def parse_end_to_end(out: str) -> dict[str, Any]:
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    pct = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    if not avg or not pct:
        raise ValueError(f"no EndToEndLatency result in: {out[-500:]}")
    return {
        "e2e_latency": {
            "avg_ms": float(avg[1]),
            "p50_ms": float(pct[1]),
            "p99_ms": float(pct[2]),
            "p999_ms": float(pct[3]),
        }
    }


def run_all(
    system,
    w: Workload,
    quick: bool,
    broker_cpu_s: Callable[[], float] | None = None,
    cpus: frozenset[int] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """(tool, result row) per tool; a tool that fails gives {"error": ...} and the others
    still run (a broker may lack something one tool needs). With `broker_cpu_s` (the
    broker's CPU seconds so far), the produce and consume rows carry the broker's CPU
    seconds per GiB moved; `cpus` is where the tools run."""
    libs = kafka_ref.ensure_jars(kafka_ref.KAFKA_VERSION)
    records = (200_000 if quick else 2_000_000) * 1024 // max(w.message_size, 1)
    records = min(records, 5_000_000)
    topic = "bench-java-perf"
    e2e_topic = "bench-java-e2e"
    props = [
        f"bootstrap.servers={system.bootstrap}",
        f"acks={'-1' if w.acks == 'all' else w.acks}",
        "linger.ms=5",
        "batch.size=1048576",
        f"compression.type={w.compression}",
        "enable.idempotence=false",
    ]
    steps = [
        (
            "java-produce",
            "org.apache.kafka.tools.ProducerPerformance",
            [
                "--topic",
                topic,
                "--num-records",
                str(records),
                "--record-size",
                str(w.message_size),
                "--throughput",
                "-1",
                "--producer-props",
                *props,
            ],
            parse_producer_perf,
        ),
        (
            "java-consume",
            "org.apache.kafka.tools.ConsumerPerformance",
            [
                "--bootstrap-server",
                system.bootstrap,
                "--topic",
                topic,
                "--messages",
                str(records),
                "--timeout",
                "60000",
            ],
            parse_consumer_perf,
        ),
        (
            "java-e2e",
            "org.apache.kafka.tools.EndToEndLatency",
            [
                system.bootstrap,
                e2e_topic,
                str(2_000 if quick else 20_000),
                w.acks,
                str(w.message_size),
            ],
            parse_end_to_end,
        ),
    ]
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        create_topics(system.bootstrap, [topic], w.partitions_per_topic)
        create_topics(system.bootstrap, [e2e_topic], 1)
    except Exception as e:
        return [("java-setup", {"error": str(e)})]
    for phase, main_class, args, parse in steps:
        try:
            before = broker_cpu_s() if broker_cpu_s is not None else 0.0
            row = {"phase": phase, **parse(_run(libs, main_class, args, cpus))}
            if broker_cpu_s is not None and phase != "java-e2e":
                cpu = broker_cpu_s() - before
                gib = row["records"] * w.message_size / GIB
                row["broker_cpu_s"] = cpu
                row["broker_cpu_s_per_gib"] = cpu / gib if gib else None
            rows.append((phase, row))
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            rows.append((phase, {"error": str(e)[-1500:]}))
    return rows
