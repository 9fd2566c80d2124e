"""One benchmark run: limits, then each system in turn under the same workload and client.

Per system: start the broker, warm the page cache, then
- produce phase: ``producersPerTopic`` confluent-kafka processes per topic (max rate or
  ``producerRate``) with ``consumerPerSubscription`` consumer processes tailing the topic
  (publish latency send -> ack, end-to-end latency consume time - record timestamp);
- catch-up phase: consumer processes read everything produced from offset 0 as fast as
  they can (the consume throughput);
- sweep (when ``producerRateFractions``): fixed-rate runs at those fractions of the rate the
  produce phase reached, latency measured from the intended send time;
- Java drivers (``--drivers ...,java`` and a Kafka jar cache): ProducerPerformance,
  ConsumerPerformance and EndToEndLatency from Kafka's own tools against the same broker.
Every measurement is one JSON line in results.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalite.bench import java_driver, limits, pinning
from kafkalite.bench.broker_stats import ProcessSampler, cpu_seconds
from kafkalite.bench.clusters import make_cluster
from kafkalite.bench.histogram import Histogram
from kafkalite.bench.progress import Progress
from kafkalite.bench.systems import BrokerProcess, make_system
from kafkalite.bench.topics import create_topics
from kafkalite.bench.worker import CATCHUP_SAMPLE
from kafkalite.bench.workload import Workload

MIB = 1 << 20
GIB = 1 << 30
WARMUP_BYTES = int(1.25 * GIB)
WORKER_START_DELAY_S = 3.0  # time for worker processes to import and connect
WORKER_TIMEOUT_PAD_S = 120
# The JVM compiles its hot paths during the first seconds under load: every system gets the
# same short produce before anything is measured, so Kafka is not timed while it warms up.
JVM_WARMUP_S = 15
JVM_WARMUP_QUICK_S = 5
WARMUP_MAX_BYTES = 512 * MIB
WARMUP_MAX_BYTES_QUICK = 64 * MIB


@dataclass
class RunOptions:
    workload: Workload
    systems: list[str]
    out_dir: Path
    data_root: Path
    quick: bool = False
    runs: int = 1
    drivers: tuple[str, ...] = ("confluent",)
    profile: Any = None  # profiles.Profile or None
    measure_limits: bool = True
    # Broker on one core, clients on the others (when the machine has two or more).
    pin: bool = True
    run_id: str = field(
        default_factory=lambda: time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    )


class Results:
    """Appends JSON lines to results.jsonl and keeps them in memory for the report."""

    def __init__(self, path: Path, base: dict[str, Any]) -> None:
        self.path = path
        self.base = base
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> dict[str, Any]:
        full = {**self.base, "ts": time.time(), **row}
        self.rows.append(full)
        with self.path.open("a") as f:
            f.write(json.dumps(full) + "\n")
        return full


def run_workers(
    configs: list[dict[str, Any]], timeout_s: float, cpus: frozenset[int] | None = None
) -> list[dict[str, Any]]:
    """Start one process per config (on `cpus` when given), wait for all, return their JSON
    results."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kafkalite.bench.worker", json.dumps(c)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=pinning.preexec(cpus),
        )
        for c in configs
    ]
    results = []
    deadline = time.monotonic() + timeout_s
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            lines = out.strip().splitlines()
            if p.returncode != 0 or not lines:
                raise RuntimeError(f"bench worker failed (rc {p.returncode}): {err[-1500:]}")
            results.append(json.loads(lines[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def _split(items: list[int], n: int) -> list[list[int]]:
    n = max(1, min(n, len(items)))
    return [items[i::n] for i in range(n)]


def _merge_timelines(parts: list[list[int]]) -> list[float]:
    length = max((len(p) for p in parts), default=0)
    return [sum(p[i] for p in parts if i < len(p)) / MIB for i in range(length)]


def _hist(results: list[dict[str, Any]]) -> Histogram:
    return Histogram.merged(Histogram.from_json(r["latency"]) for r in results)


def produce_phase(
    system: BrokerProcess,
    w: Workload,
    topics: list[str],
    rate_msgs: float,
    consumers: bool,
    client_wrap: list[str] | None = None,
    max_messages: int = 0,
    client_cpus: frozenset[int] | None = None,
) -> dict[str, Any]:
    """Producers (and tailing consumers) for the workload's duration. Returns a result row."""
    start_at = time.time() + WORKER_START_DELAY_S
    n_prod = w.producers_per_topic * len(topics)
    common = {
        "bootstrap": system.bootstrap,
        "message_size": w.message_size,
        "duration": w.test_duration_seconds,
        "warmup": w.warmup_seconds,
        "start_at": start_at,
    }
    configs: list[dict[str, Any]] = []
    for t in topics:
        for _ in range(w.producers_per_topic):
            configs.append(
                {
                    **common,
                    "role": "producer",
                    "topic": t,
                    "rate": rate_msgs / n_prod if rate_msgs else 0,
                    "acks": w.acks,
                    "compression": w.compression,
                    "keyed": w.keyed,
                    "max_messages": max_messages // n_prod if max_messages else 0,
                }
            )
        if consumers and w.consumer_per_subscription:
            for parts in _split(list(range(w.partitions_per_topic)), w.consumer_per_subscription):
                # Sample end-to-end latency at max rate: a Python loop over every record
                # would make the consumer, not the broker, the limit.
                configs.append(
                    {
                        **common,
                        "role": "consumer",
                        "topic": t,
                        "partitions": parts,
                        "sample": 1 if rate_msgs else 8,
                    }
                )
    timeout = WORKER_START_DELAY_S + w.test_duration_seconds + WORKER_TIMEOUT_PAD_S
    cpu_before = broker_cpu_s(system)
    res = run_workers(configs, timeout, client_cpus)
    broker_cpu = broker_cpu_s(system) - cpu_before
    prods = [r for r in res if r["role"] == "producer"]
    cons = [r for r in res if r["role"] == "consumer"]
    wall = max(r["wall_s"] for r in prods)
    # A backlog run stops at max_messages, not at the end of its (long) duration.
    window_s = wall if max_messages else w.test_duration_seconds - w.warmup_seconds
    win_bytes = sum(r["window_bytes"] for r in prods)
    acked = sum(r["acked"] for r in prods)
    errors = sum(r["errors"] for r in prods)
    pub = _hist(prods)
    row: dict[str, Any] = {
        "produce_mb_s": win_bytes / MIB / window_s,
        "produce_records_per_s": win_bytes / w.message_size / window_s,
        "records": acked,
        "bytes": acked * w.message_size,
        "errors": errors,
        "first_error": next((r["first_error"] for r in prods if r["first_error"]), ""),
        "offered_msgs_s": rate_msgs,
        "publish_latency": pub.summary_ms(),
        "publish_hist": pub.to_json(),
        "timeline_produce_mb_s": _merge_timelines([r["timeline_bytes_per_s"] for r in prods]),
        "producer_processes": len(prods),
        "consumer_processes": len(cons),
        # CPU seconds per wall second of each client process: well under 1.0 means the
        # client was waiting on the broker, not the other way round.
        "client_cpu_per_process": [round(r["cpu_s"] / max(r["wall_s"], 1e-9), 3) for r in res],
        "wall_s": wall,
        # Over the whole phase (warm-up included), so per GiB of everything acknowledged.
        "broker_cpu_s": broker_cpu,
        "broker_cpu_s_per_gib": broker_cpu / (acked * w.message_size / GIB) if acked else None,
    }
    if cons:
        e2e = _hist(cons)
        row["tail_consume_mb_s"] = sum(r["window_bytes"] for r in cons) / MIB / window_s
        row["e2e_latency"] = e2e.summary_ms()
        row["e2e_hist"] = e2e.to_json()
        row["timeline_consume_mb_s"] = _merge_timelines([r["timeline_bytes_per_s"] for r in cons])
    return row


def broker_pids(system: Any) -> list[int]:
    """Every broker process of ``system`` (all brokers of a cluster)."""
    pids = system.pids() if hasattr(system, "pids") else [system.pid()]
    return [p for p in pids if p is not None]


def broker_cpu_s(system: Any) -> float:
    """User + system CPU seconds so far of every broker process of ``system``."""
    return cpu_seconds(broker_pids(system))


def catchup_phase(
    system: BrokerProcess,
    w: Workload,
    topics: list[str],
    timeout_s: float,
    client_cpus: frozenset[int] | None = None,
) -> dict[str, Any]:
    """Consumers read every partition from offset 0 to its current end, timed."""
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": system.bootstrap, "group.id": "kafkalite-bench-probe"})
    ends: dict[tuple[str, int], int] = {}
    for t in topics:
        for p in range(w.partitions_per_topic):
            ends[(t, p)] = probe.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
    probe.close()
    start_at = time.time() + WORKER_START_DELAY_S
    configs = []
    for t in topics:
        for parts in _split(
            list(range(w.partitions_per_topic)), max(1, w.consumer_per_subscription)
        ):
            configs.append(
                {
                    "role": "consumer",
                    "bootstrap": system.bootstrap,
                    "message_size": w.message_size,
                    "topic": t,
                    "partitions": parts,
                    "target": sum(ends[(t, p)] for p in parts),
                    "duration": timeout_s,
                    "start_at": start_at,
                    "sample": CATCHUP_SAMPLE,  # records are old: latency means nothing here
                }
            )
    cpu_before = broker_cpu_s(system)
    res = run_workers(configs, WORKER_START_DELAY_S + timeout_s + WORKER_TIMEOUT_PAD_S, client_cpus)
    broker_cpu = broker_cpu_s(system) - cpu_before
    consumed = sum(r["consumed"] for r in res)
    target = sum(ends.values())
    elapsed = max(r["elapsed_s"] for r in res)
    consumed_gib = consumed * w.message_size / GIB
    return {
        "consume_mb_s": consumed * w.message_size / MIB / max(elapsed, 1e-9),
        "consume_records_per_s": consumed / max(elapsed, 1e-9),
        "records": consumed,
        "target_records": target,
        "complete": consumed >= target,
        "errors": sum(r["errors"] for r in res),
        "elapsed_s": elapsed,
        "timeline_consume_mb_s": _merge_timelines([r["timeline_bytes_per_s"] for r in res]),
        "consumer_processes": len(res),
        "client_cpu_per_process": [round(r["cpu_s"] / max(r["wall_s"], 1e-9), 3) for r in res],
        "broker_cpu_s": broker_cpu,
        "broker_cpu_s_per_gib": broker_cpu / consumed_gib if consumed else None,
    }


def estimate_seconds(opts: RunOptions) -> float:
    w = opts.workload
    per_system = 20 + WARMUP_BYTES / (0.3 * GIB) + w.test_duration_seconds + 10
    per_system += (JVM_WARMUP_QUICK_S if opts.quick else JVM_WARMUP_S) + 8
    per_system += 15  # catch-up read
    per_system += len(w.producer_rate_fractions) * (w.test_duration_seconds + 8)
    if w.baseline_replication_factor:
        per_system += w.test_duration_seconds + 10
    if "java" in opts.drivers:
        per_system += 60
    total = per_system * len(opts.systems) * opts.runs
    if opts.measure_limits:
        total += 25 if opts.quick else 70
    return total


def topic_names(w: Workload, label: str) -> list[str]:
    return [f"bench-{label}-{i}" for i in range(w.topics)]


def measure_system(
    name: str,
    opts: RunOptions,
    results: Results,
    progress: Progress,
    run_index: int,
    reference_rate: float | None = None,
) -> float:
    """One system through every phase. The fixed-rate sweep offers fractions of
    `reference_rate` (Kafka's maximum in this run, so every system faces the same loads)
    or, without one, of this system's own maximum. Returns the maximum produce rate
    measured (records/s; 0 for backlog workloads)."""
    w = opts.workload
    net = opts.profile.network if opts.profile is not None else None
    host = net.broker_host if net else "127.0.0.1"
    wrap = opts.profile.broker_wrap if opts.profile is not None else None
    system: Any
    if w.brokers > 1:
        if opts.profile is not None:
            raise ValueError("hardware profiles apply to single-broker systems (brokers: 1)")
        system = make_cluster(name, opts.data_root / f"{name}-data", w.brokers)
    else:
        system = make_system(name, opts.data_root / f"{name}-data", host, wrap)
    rf = w.replication_factor
    # Only when asked for: the single-broker workloads keep creating plain topics.
    topic_config = (
        {"min.insync.replicas": str(w.min_insync_replicas)} if w.min_insync_replicas > 1 else None
    )
    base = {"kind": "result", "system": name, "run_index": run_index, "driver": "confluent-kafka"}
    cpus = pinning.split() if opts.pin else None
    clients = cpus.clients if cpus is not None else None
    with progress.step(f"{name}: start broker", 15):
        system.start()
    sampler = ProcessSampler(lambda: broker_pids(system)).start()
    try:
        if cpus is not None:
            for pid in broker_pids(system):
                pinning.pin_process(pid, cpus.broker)
        if opts.profile is not None:
            opts.profile.attach_broker(system)
        results.add(
            {
                "kind": "system",
                "system": name,
                "settings": system.settings,
                "note": system.note,
                "pid": system.pid(),
                "cpu_placement": cpus.describe() if cpus is not None else "not pinned",
            }
        )
        with progress.step(f"{name}: warm page cache", WARMUP_BYTES / (0.3 * GIB)):
            limits.warm_page_cache(opts.data_root, WARMUP_BYTES)
        sampler.mark("warm-up")
        warmup_s = JVM_WARMUP_QUICK_S if opts.quick else JVM_WARMUP_S
        with progress.step(f"{name}: warm-up produce for {warmup_s} s (JIT)", warmup_s + 8):
            topics = topic_names(w, "warmup")
            create_topics(system.bootstrap, topics, w.partitions_per_topic, rf, topic_config)
            # Bounded in bytes too: the warm-up is for the JIT, not for filling the disk.
            cap = (WARMUP_MAX_BYTES_QUICK if opts.quick else WARMUP_MAX_BYTES) // w.message_size
            row = produce_phase(
                system,
                _warmup_workload(w, warmup_s),
                topics,
                0,
                False,
                max_messages=max(cap, 1),
                client_cpus=clients,
            )
        results.add({**base, "phase": "warm-up", **row})
        sampler.mark("produce")
        max_rate = 0.0
        if w.consumer_backlog_size_bytes:
            topics = topic_names(w, "backlog")
            create_topics(system.bootstrap, topics, w.partitions_per_topic, rf, topic_config)
            backlog = w.consumer_backlog_size_bytes // w.message_size
            with progress.step(
                f"{name}: produce a {w.consumer_backlog_size_bytes / GIB:.1f} GiB backlog", 30
            ):
                row = produce_phase(
                    system,
                    _backlog_workload(w),
                    topics,
                    0,
                    False,
                    max_messages=backlog,
                    client_cpus=clients,
                )
            results.add({**base, "phase": "backlog-produce", **row})
        else:
            topics = topic_names(w, "max")
            create_topics(system.bootstrap, topics, w.partitions_per_topic, rf, topic_config)
            with progress.step(
                f"{name}: produce for {w.test_duration_seconds:g} s", w.test_duration_seconds + 10
            ):
                row = produce_phase(system, w, topics, w.producer_rate, True, client_cpus=clients)
            phase = "produce" if not w.producer_rate else "fixed-rate"
            results.add({**base, "phase": phase, "replication_factor": rf, **row})
            max_rate = row["produce_records_per_s"]
            if w.baseline_replication_factor:
                sampler.mark("baseline-produce")
                baseline_phase(system, w, results, base, progress, clients)
        sampler.mark("catch-up")
        with progress.step(f"{name}: catch-up read from offset 0", 15):
            row = catchup_phase(system, w, topics, timeout_s=300, client_cpus=clients)
        results.add({**base, "phase": "catch-up", **row})
        sampler.mark("fixed-rate")
        base_rate = reference_rate or max_rate
        for i, frac in enumerate(w.producer_rate_fractions):
            rate = max(1.0, frac * base_rate)
            topics = topic_names(w, f"rate{i}")
            create_topics(system.bootstrap, topics, w.partitions_per_topic, rf, topic_config)
            with progress.step(
                f"{name}: fixed rate {frac:.0%} of max", w.test_duration_seconds + 8
            ):
                row = produce_phase(system, w, topics, rate, True, client_cpus=clients)
            results.add(
                {
                    **base,
                    "phase": "fixed-rate",
                    "rate_fraction": frac,
                    "rate_reference": "kafka max"
                    if reference_rate or name == "kafka"
                    else "own max",
                    **row,
                }
            )
        # Kafka's own tools once per system (the first round): a second client to check the
        # first against, not a figure that needs medians.
        if "java" in opts.drivers and run_index == 0:
            sampler.mark("java")
            with progress.step(f"{name}: Kafka's Java perf tools", 60):
                for tool, row in java_driver.run_all(
                    system, w, opts.quick, lambda: broker_cpu_s(system), clients
                ):
                    if "error" in row:
                        progress.say(f"{name}: {tool} failed: {row['error'].splitlines()[-1]}")
                        results.add({"kind": "error", "system": name, "phase": tool, **row})
                    else:
                        results.add({**base, "driver": "kafka-java-tools", **row})
        return max_rate
    finally:
        sampler.stop()
        cost = sampler.summary()
        results.add({"kind": "broker-cost", "system": name, "run_index": run_index, **cost})
        with progress.step(f"{name}: stop broker", 3):
            system.stop()


def baseline_phase(
    system: Any,
    w: Workload,
    results: Results,
    base: dict[str, Any],
    progress: Progress,
    client_cpus: frozenset[int] | None = None,
) -> None:
    """The same producers on a topic of the baseline replication factor: what
    replication costs is the ratio of the two produce rates."""
    brf = w.baseline_replication_factor
    topics = topic_names(w, f"rf{brf}")
    create_topics(system.bootstrap, topics, w.partitions_per_topic, brf)
    with progress.step(
        f"{system.name}: produce at RF={brf} for {w.test_duration_seconds:g} s",
        w.test_duration_seconds + 10,
    ):
        row = produce_phase(system, w, topics, w.producer_rate, False, client_cpus=client_cpus)
    results.add({**base, "phase": "baseline-produce", "replication_factor": brf, **row})


def _warmup_workload(w: Workload, seconds: int) -> Workload:
    from dataclasses import replace

    return replace(w, test_duration_seconds=seconds, warmup_seconds=0)


def _backlog_workload(w: Workload) -> Workload:
    from dataclasses import replace

    # Long enough for the backlog at a modest rate; producers stop at max_messages.
    return replace(w, test_duration_seconds=600, warmup_seconds=0)


def run(opts: RunOptions) -> Results:
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    opts.data_root.mkdir(parents=True, exist_ok=True)
    base = {
        "run_id": opts.run_id,
        "workload": opts.workload.name,
        "profile": opts.profile.name if opts.profile is not None else "none",
        "quick": opts.quick,
    }
    results = Results(opts.out_dir / "results.jsonl", base)
    results.add(
        {
            "kind": "run",
            "workload_spec": opts.workload.as_dict(),
            "systems": opts.systems,
            "drivers": list(opts.drivers),
            "host": {"cpus": os.cpu_count(), "mem_gib": _mem_gib(), "kernel": os.uname().release},
            "python": sys.version.split()[0],
            "data_root": str(opts.data_root),
        }
    )
    with Progress(estimate_seconds(opts)) as progress:
        try:
            if opts.profile is not None:
                with progress.step(f"apply hardware profile {opts.profile.name}", 10):
                    opts.profile.apply(opts.data_root)
            if opts.measure_limits:
                with progress.step("limits: fio + iperf3", 25 if opts.quick else 70):
                    net = opts.profile.network if opts.profile is not None else None
                    for lim in limits.measure_limits(
                        opts.data_root,
                        opts.quick,
                        host=net.broker_host if net else "127.0.0.1",
                        server_wrap=net.broker_wrap if net else None,
                        disk_wrap=opts.profile.disk_wrap if opts.profile is not None else None,
                    ):
                        results.add({"kind": "limit", **lim})
                if opts.profile is not None:
                    for row in opts.profile.achieved(results.rows):
                        results.add({"kind": "profile", **row})
            sweep_on_kafka = bool(opts.workload.producer_rate_fractions) and "kafka" in opts.systems
            for run_index in range(opts.runs):
                # Alternate the order run by run so neither system always goes first; a
                # latency sweep needs Kafka's maximum first, so Kafka leads those runs.
                order = opts.systems if run_index % 2 == 0 else list(reversed(opts.systems))
                if sweep_on_kafka:
                    order = ["kafka", *(s for s in order if s != "kafka")]
                reference: float | None = None
                for name in order:
                    try:
                        top = measure_system(name, opts, results, progress, run_index, reference)
                        if name == "kafka" and sweep_on_kafka and top:
                            reference = top
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except Exception as e:
                        # One system failing (a broker that would not start, a client error)
                        # is a result too; the others still run and the report is written.
                        progress.say(f"{name}: run {run_index + 1} failed: {type(e).__name__}: {e}")
                        results.add(
                            {
                                "kind": "error",
                                "system": name,
                                "run_index": run_index,
                                "error": f"{type(e).__name__}: {e}"[-2000:],
                            }
                        )
        finally:
            if opts.profile is not None:
                opts.profile.teardown()
    return results


def _mem_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            return round(int(f.readline().split()[1]) / (1 << 20), 1)
    except OSError:
        return 0.0
