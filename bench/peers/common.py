"""What every suite shares: the brokers it runs against, per-test outcomes, their
comparison and the result files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PATCHES = Path(__file__).resolve().parent
RESULTS = REPO / "bench" / "results" / "peers"
KAFKA_VERSION = "4.4.0"

# Broker keys both brokers get (Kafka's spelling; kafkalite reads the same keys). A
# single node cannot replicate its internal topics, and a group's first rebalance need
# not wait for more members.
SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}
# Kafka's own: its share-group state topic (RF 3 by default, which one node cannot hold).
KAFKA_ONLY = {
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}

# What a broker kind is called on the page.
BROKERS = {
    "kafkalite": "kafkalite (single node)",
    "kafkalite-cluster": "kafkalite (Cluster(brokers=3))",
    "kafka": f"Apache Kafka {KAFKA_VERSION} (KRaft single node)",
    "kafka-cluster": f"Apache Kafka {KAFKA_VERSION} (KRaft, 3 nodes)",
}
CLUSTER_BROKERS = 3
# A 3-broker cluster's internal topics are replicated as Kafka's defaults would have them.
CLUSTER_SETTINGS = {
    **SETTINGS,
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
}
KAFKA_CLUSTER_ONLY = {
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}

PASS, FAIL, SKIP = "pass", "fail", "skip"
FAILURE_LINES_MAX = 12


class SuiteError(RuntimeError):
    """A suite could not be fetched, built or run (not a test failure)."""


@dataclass
class Outcome:
    """One test's result against one broker: pass, fail or skip, and for a failure (or a
    skip) the lines that say why."""

    outcome: str
    lines: list[str] = field(default_factory=list)


def cache_dir(*parts: str) -> Path:
    """Where fetched suites and their builds live: outside the repository."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = base.joinpath("kafkalite", "peers", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def run(cmd: list[str], cwd: Path | None = None, timeout: float = 1800, **env: str) -> str:
    """Run a fetch or build step; its output on success, a SuiteError naming it otherwise."""
    done = subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SuiteError(f"`{' '.join(cmd)}` failed ({done.returncode}):\n{tail}")
    return done.stdout


def apply_patch(suite: str, tree: Path) -> Path | None:
    """Apply ``bench/peers/<suite>.patch`` to a freshly unpacked tree (once: a marker file
    records it). None when the suite needs no patch."""
    patch = PATCHES / f"{suite}.patch"
    if not patch.exists():
        return None
    marker = tree / ".kafkalite-patched"
    if marker.exists() and marker.read_text() == patch.read_text():
        return patch
    if marker.exists():
        raise SuiteError(f"{tree} holds an older patch: remove it and run again")
    run(["patch", "-p1", "--forward", "--batch", "-i", str(patch)], cwd=tree)
    marker.write_text(patch.read_text())
    return patch


@contextmanager
def broker(
    kind: str,
    work: Path,
    extra: Mapping[str, str] | None = None,
    per_broker: Mapping[int, Mapping[str, str]] | None = None,
) -> Iterator[str]:
    """Start a broker (or cluster) of `kind` (see BROKERS) with SETTINGS (CLUSTER_SETTINGS
    for a cluster) on loopback; yields its bootstrap address and stops it afterwards.
    `extra` are a suite's keys for every broker, `per_broker` its keys for one broker
    by id (a single node is broker 1)."""
    from kafkalite.bench import systems

    extra = dict(extra or {})
    per_broker = {i: dict(keys) for i, keys in (per_broker or {}).items()}
    data = work / kind / "data"
    shutil.rmtree(data.parent, ignore_errors=True)
    data.parent.mkdir(parents=True)
    if kind == "kafkalite":
        lite = systems.Kafkalite(data, overrides={**SETTINGS, **extra, **per_broker.get(1, {})})
        # As Kafka's server.properties has it (a suite may read where the key came from).
        lite.overrides["advertised.listeners"] = f"PLAINTEXT://{lite.bootstrap}"
        proc: systems.BrokerProcess = lite
    elif kind == "kafka":
        overrides = {**SETTINGS, **KAFKA_ONLY, **extra, **per_broker.get(1, {})}
        proc = systems.Kafka(data, version=KAFKA_VERSION, overrides=overrides)
    elif kind == "kafkalite-cluster":
        yield from _cluster(data, extra, per_broker)
        return
    elif kind == "kafka-cluster":
        yield from _kafka_cluster(data, extra, per_broker)
        return
    else:
        raise ValueError(f"unknown broker {kind!r} (known: {', '.join(BROKERS)})")
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.stop()


def _cluster(
    data: Path, extra: dict[str, str], per_broker: dict[int, dict[str, str]]
) -> Iterator[str]:
    from kafkalite.cluster import Cluster

    with Cluster(
        brokers=CLUSTER_BROKERS,
        overrides={**CLUSTER_SETTINGS, **extra},
        broker_overrides=per_broker,
        data_dir=data,
    ) as cluster:
        yield cluster.bootstrap_servers


def _kafka_cluster(
    data: Path, extra: dict[str, str], per_broker: dict[int, dict[str, str]]
) -> Iterator[str]:
    from kafkalite.bench.clusters import KafkaCluster

    keys = {**CLUSTER_SETTINGS, **KAFKA_CLUSTER_ONLY, **extra}
    nodes = {i: {**keys, **per_broker.get(i, {})} for i in range(1, CLUSTER_BROKERS + 1)}
    cluster = KafkaCluster(data, CLUSTER_BROKERS, version=KAFKA_VERSION, overrides=nodes)
    cluster.start()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


def compare(runs: dict[str, dict[str, Outcome]]) -> dict[str, list[str]]:
    """Tests by verdict across the brokers that ran: "passed on all", "failed on all",
    "skipped on all", "differs" (a different outcome somewhere, or run on only some)."""
    names = sorted({t for tests in runs.values() for t in tests})
    verdicts: dict[str, list[str]] = {
        "differs": [],
        "failed on all": [],
        "skipped on all": [],
        "passed on all": [],
    }
    for name in names:
        seen = {runs[b][name].outcome if name in runs[b] else "not run" for b in runs}
        if len(seen) > 1:
            verdicts["differs"].append(name)
        elif seen == {FAIL}:
            verdicts["failed on all"].append(name)
        elif seen == {SKIP}:
            verdicts["skipped on all"].append(name)
        else:
            verdicts["passed on all"].append(name)
    return verdicts


def counts(tests: dict[str, Outcome]) -> dict[str, int]:
    out = {PASS: 0, FAIL: 0, SKIP: 0}
    for t in tests.values():
        out[t.outcome] += 1
    return out


def result_path(suite: str) -> Path:
    return RESULTS / f"{suite}.json"


def load(suite: str) -> dict:
    path = result_path(suite)
    return json.loads(path.read_text()) if path.exists() else {}


def save(
    suite: str,
    meta: dict[str, str],
    kind: str,
    tests: dict[str, Outcome],
    duration_s: float,
    settings: dict[str, str],
) -> Path:
    """Merge one broker's run into the suite's result file (the other brokers' runs stay)."""
    data = load(suite)
    if any(data.get(k) != v for k, v in meta.items()):
        data = {"runs": {}}  # another version or command: earlier runs no longer compare
    data.update(meta)
    data.setdefault("runs", {})[kind] = {
        "broker": BROKERS[kind],
        "settings": settings,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "duration_s": round(duration_s),
        "counts": counts(tests),
        "tests": {name: asdict(t) for name, t in sorted(tests.items())},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = result_path(suite)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def runs_of(data: dict) -> dict[str, dict[str, Outcome]]:
    return {
        kind: {name: Outcome(**t) for name, t in run["tests"].items()}
        for kind, run in data.get("runs", {}).items()
    }
