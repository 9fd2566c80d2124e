"""Workload YAML: every shipped file loads; bad input names the field and the value."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("yaml", reason="pip install '.[bench]'")

from kafkalite.bench.workload import WorkloadError, load_workload, parse_workload

WORKLOADS = Path(__file__).resolve().parents[2] / "bench" / "workloads"


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_workloads_load(path: Path) -> None:
    w = load_workload(path)
    assert w.name == path.stem
    q = w.quick()
    assert q.test_duration_seconds <= 12 and q.consumer_backlog_size_bytes <= 512 << 20


def test_required_workloads_exist() -> None:
    names = {p.stem for p in WORKLOADS.glob("*.yaml")}
    assert {
        "max-throughput-1kb",
        "max-throughput-100b",
        "acks-all-1kb",
        "catch-up-consume",
    } <= names
    sweep = load_workload(WORKLOADS / "latency-sweep-1kb.yaml")
    assert sweep.producer_rate_fractions == (0.1, 0.3, 0.5, 0.7, 0.9)
    assert load_workload(WORKLOADS / "acks-all-1kb.yaml").acks == "all"
    assert load_workload(WORKLOADS / "catch-up-consume.yaml").consumer_backlog_size_bytes >= 2 << 30


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"messageSize": "big"}, "'messageSize' = 'big'"),
        ({"messageSize": 0}, "between 1"),
        ({"acks": "2"}, "'acks' = '2': must be one of 0, 1, all"),
        ({"compression": "brotli"}, "'compression' = 'brotli'"),
        ({"keyed": "yes"}, "'keyed' = 'yes': must be true or false"),
        ({"partitionz": 3}, "unknown field 'partitionz'"),
        ({"producerRateFractions": [0.5, 2]}, "entry 2 must be a number in (0, 1]"),
        ({"testDurationSeconds": 5, "warmupSeconds": 5}, "warmupSeconds (5) must be less"),
        ({"producerRate": 100, "producerRateFractions": [0.5]}, "needs producerRate: 0"),
    ],
)
def test_bad_fields_are_named(data: dict, needle: str) -> None:
    with pytest.raises(WorkloadError) as e:
        parse_workload(data, "w.yaml")
    assert needle in str(e.value)
    assert "w.yaml" in str(e.value)


def test_acks_minus_one_means_all() -> None:
    assert parse_workload({"acks": -1}).acks == "all"


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("topics: [1\n")
    with pytest.raises(WorkloadError, match="not valid YAML"):
        load_workload(bad)
    with pytest.raises(WorkloadError, match="cannot read workload"):
        load_workload(tmp_path / "missing.yaml")
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just a string\n")
    with pytest.raises(WorkloadError, match="expected a mapping"):
        load_workload(scalar)


def test_rf3_workload_describes_a_replicated_cluster() -> None:
    w = load_workload(WORKLOADS / "rf3-acks-all.yaml")
    assert (w.brokers, w.replication_factor, w.min_insync_replicas) == (3, 3, 2)
    assert w.baseline_replication_factor == 1 and w.acks == "all"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"brokers": 1, "replicationFactor": 3}, "replicationFactor (3) exceeds brokers (1)"),
        ({"brokers": 3, "baselineReplicationFactor": 4}, "exceeds brokers (3)"),
        ({"brokers": 3, "replicationFactor": 2, "minInsyncReplicas": 3}, "minInsyncReplicas"),
        ({"brokers": 0}, "'brokers' = 0"),
    ],
)
def test_bad_replication_fields_are_named(data: dict[str, object], needle: str) -> None:
    with pytest.raises(WorkloadError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        parse_workload(data, "w.yaml")
