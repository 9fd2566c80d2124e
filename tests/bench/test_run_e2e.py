"""One short real run: the kafkalite daemon, confluent-kafka worker processes, report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TINY = Path(__file__).resolve().parents[2] / "bench" / "workloads" / "tiny.yaml"


@pytest.mark.timeout(180)
def test_tiny_run_against_kafkalite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkalite.bench",
            "run",
            str(TINY),
            "--systems",
            "kafkalite",
            "--quick",
            "--drivers",
            "confluent",
            "--no-limits",
            "--out",
            str(out),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("kafkalite: ") and "records sent" in lines[0]
    head = json.loads(lines[-1])
    assert head["produce_mb_s"] > 0 and head["consume_mb_s"] > 0
    assert head["kafka_produce_mb_s"] is None
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    produce = next(r for r in rows if r.get("phase") == "produce")
    catchup = next(r for r in rows if r.get("phase") == "catch-up")
    assert produce["errors"] == 0 and catchup["complete"]
    assert catchup["records"] == produce["records"]
    assert (out / "report.md").exists() and (out / "latency-percentiles.png").exists()


def test_bad_input_exits_2_naming_the_value(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("messageSize: -5\n")
    for args, needle in (
        ([str(bad)], "'messageSize' = -5"),
        ([str(TINY), "--profile", "floppy"], "unknown hardware profile 'floppy'"),
        ([str(TINY), "--systems", "kafkalite,redpanda"], "unknown system 'redpanda'"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "kafkalite.bench", "run", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and needle in done.stderr, done.stderr


@pytest.mark.timeout(240)
def test_tiny_replicated_run_against_a_kafkalite_cluster(tmp_path: Path) -> None:
    """A workload with brokers: 3 runs against Cluster(brokers=3), measures the broker
    CPU of all three processes and adds the RF=1 baseline phase."""
    workload = tmp_path / "tiny-rf3.yaml"
    tiny = TINY.read_text().replace("name: tiny", "name: tiny-rf3").replace('acks: "1"', "")
    workload.write_text(
        tiny + "acks: all\nbrokers: 3\nreplicationFactor: 3\nminInsyncReplicas: 2\n"
        "baselineReplicationFactor: 1\n"
    )
    out = tmp_path / "out"
    args = [
        "--systems",
        "kafkalite",
        "--quick",
        "--drivers",
        "confluent",
        "--no-limits",
        "--out",
        str(out),
    ]
    args += ["--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        [sys.executable, "-m", "kafkalite.bench", "run", str(workload), *args],
        capture_output=True,
        text=True,
        timeout=230,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    head = json.loads(done.stdout.strip().splitlines()[-1])
    assert head["broker_cpu_s_per_gib"] > 0
    assert head["rf3_produce_mb_s"] > 0 and head["rf1_produce_mb_s"] > 0
    assert head["rf3_vs_rf1_throughput"] > 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    system = next(r for r in rows if r.get("kind") == "system")
    assert system["settings"]["brokers"] == "3"
    phases = {r.get("phase"): r for r in rows if r.get("kind") == "result"}
    assert phases["produce"]["replication_factor"] == 3 and phases["produce"]["errors"] == 0
    assert phases["baseline-produce"]["replication_factor"] == 1
    assert "RF3 / RF1" in (out / "report.md").read_text()
