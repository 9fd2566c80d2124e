"""What scale costs a broker: many partitions, and a log far larger than memory.

    python bench/scale.py partitions [--counts 1000,10000] [--systems kafkalite,kafka]
    python bench/scale.py volume [--gb 50] [--step-gb 5] [--systems kafkalite]
    python bench/scale.py cluster [--counts 1000,10000] [--systems kafkalite,kafka]

`partitions`: per system and partition count (topics of at most 1,000 partitions, RF=1),
the time from CreateTopics until Metadata shows every partition led; one record produced to
each; a full Metadata request's latency (median of 5); the broker's RSS, fds and threads;
the time until every partition is led and answers ListOffsets again after a clean stop
(SIGTERM) and after SIGKILL (recovery), with the record count checked after each.

`volume`: producers write `--gb` GiB in 1 GiB chunks (append rate per chunk), then two
catch-up reads of everything: from a cold page cache (dropped, which needs root) and warm.
Rates are reported per `--step-gb` step, against the first GiB's; the issue's bar is the
rate at the end within 10 % of the rate at 1 GiB. The data needs that much free disk
under --data-dir.

`cluster`: per system a 3-broker cluster at its defaults (kafkalite's `Cluster(brokers=3)`
with no overrides and its ZooKeeper; Kafka: 3 KRaft nodes, each broker + controller), RF 3:
the first count created by ONE CreateTopics (topics of 100 partitions), then partitions
added in batches of that size (one CreateTopics each) up to each further count. For each:
the time until answered and until every broker's own Metadata shows all partitions led;
then idle CPU (cores, summed over every process of the system, ZooKeeper included, over
--idle-s seconds) and RSS of each process. At the largest count: a leader election storm
(SIGKILL of the broker leading the most partitions, about a third: the time until every
survivor shows a leader for every partition), then that broker's restart (the time until
it is back in every partition's ISR, as every broker answers).

Progress goes to stderr; last comes one JSON line; a plot goes to --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalite.bench import harness
from kafkalite.bench.broker_stats import sample
from kafkalite.bench.systems import make_system
from kafkalite.bench.topics import create_topics
from kafkalite.bench.workload import Workload

GIB = 1 << 30
MIB = 1 << 20
PER_TOPIC = 1000
READY_TIMEOUT_S = 900


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] scale: {message}", file=sys.stderr, flush=True)


def led_partitions(bootstrap: str, prefix: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=60)
    return sum(
        1
        for name, t in md.topics.items()
        if name.startswith(prefix)
        for p in t.partitions.values()
        if p.leader >= 0 and p.error is None
    )


def wait_led(bootstrap: str, prefix: str, count: int) -> float:
    start = time.monotonic()
    while time.monotonic() - start < READY_TIMEOUT_S:
        try:
            if led_partitions(bootstrap, prefix) >= count:
                return time.monotonic() - start
        except Exception:  # not listening yet
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{count} partitions not led after {READY_TIMEOUT_S} s")


def record_count(bootstrap: str, topics: dict[str, int]) -> int:
    """Records in every partition; a partition whose leader is still loading after a restart
    (NOT_LEADER, retriable) is asked again for up to five minutes (Kafka loading 1,000
    partitions on a loaded 2-core machine took longer than one)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    # Answers of a partition not loaded yet; librdkafka does not flag all as retriable.
    loading = {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-probe", "log_level": 0})
    deadline = time.monotonic() + 300
    total = 0
    try:
        for t, n in topics.items():
            for p in range(n):
                while True:
                    try:
                        total += c.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1]
                        break
                    except KafkaException as e:
                        error = e.args[0]
                        retry = error.retriable() or error.code() in loading
                        if not retry or time.monotonic() > deadline:
                            raise
                        time.sleep(0.2)
        return total
    finally:
        c.close()


def partitions_case(name: str, count: int, root: Path) -> dict[str, Any]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    system = make_system(name, root / f"{name}-{count}")
    system.start()
    row: dict[str, Any] = {"system": name, "partitions": count}
    try:
        topics = {
            f"scale-{i}": min(PER_TOPIC, count - i * PER_TOPIC)
            for i in range(math.ceil(count / PER_TOPIC))
        }
        start = time.monotonic()
        for topic, n in topics.items():
            create_topics(system.bootstrap, [topic], n)
        wait_led(system.bootstrap, "scale-", count)
        row["create_s"] = round(time.monotonic() - start, 2)
        producer = Producer({"bootstrap.servers": system.bootstrap, "linger.ms": 50})
        start = time.monotonic()
        for topic, n in topics.items():
            for p in range(n):
                producer.produce(topic, b"x" * 100, partition=p)
            producer.poll(0)
        if producer.flush(300) != 0:
            raise RuntimeError("records not acknowledged within 300 s")
        row["produce_one_each_s"] = round(time.monotonic() - start, 2)
        admin = AdminClient({"bootstrap.servers": system.bootstrap})
        took = []
        for _ in range(5):
            t = time.monotonic()
            admin.list_topics(timeout=120)
            took.append(time.monotonic() - t)
        row["metadata_ms"] = round(statistics.median(took) * 1000, 1)
        row.update(_resources(system, "after create"))
        system.stop()
        # Restarted = every partition led and answering ListOffsets, timed from the launch.
        start = time.monotonic()
        system.launch()
        wait_led(system.bootstrap, "scale-", count)
        row["records_after_clean_restart"] = record_count(system.bootstrap, topics)
        row["clean_restart_s"] = round(time.monotonic() - start, 2)
        os.kill(system.pid(), signal.SIGKILL)
        system.proc.wait()
        start = time.monotonic()
        system.launch()
        wait_led(system.bootstrap, "scale-", count)
        row["records_after_kill"] = record_count(system.bootstrap, topics)
        row["kill_recovery_s"] = round(time.monotonic() - start, 2)
        row.update(_resources(system, "after recovery"))
        row["records_kept"] = row["records_after_kill"] == count
    finally:
        system.stop()
    return row


def _resources(system: Any, when: str) -> dict[str, Any]:
    s = sample([system.pid()], when)
    if s is None:
        return {}
    key = when.replace(" ", "_")
    return {
        f"rss_mib_{key}": round(s.rss_bytes / MIB, 1),
        f"fds_{key}": s.fds,
        f"threads_{key}": s.threads,
    }


def drop_page_cache() -> bool:
    subprocess.run(["sync"], check=False)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def volume_case(name: str, gib: int, step: int, root: Path) -> dict[str, Any]:
    w = Workload(
        name="scale-volume",
        description="",
        topics=1,
        partitions_per_topic=4,
        message_size=1024,
        producers_per_topic=2,
        producer_rate=0,
        consumer_per_subscription=2,
        test_duration_seconds=3600,
        warmup_seconds=0,
        acks="1",
        compression="none",
        keyed=False,
    )
    system = make_system(name, root / f"{name}-volume")
    system.start()
    topic = "scale-volume"
    out: dict[str, Any] = {"system": name, "gib": gib, "step_gib": step}
    try:
        create_topics(system.bootstrap, [topic], w.partitions_per_topic)
        per_gib = GIB // w.message_size
        append = []
        for i in range(gib):
            row = harness.produce_phase(system, w, [topic], 0, False, max_messages=per_gib)
            append.append(row["produce_mb_s"])
            say(f"{name}: {i + 1} GiB written, last GiB at {append[-1]:.0f} MiB/s")
        out["append_mb_s_per_gib"] = [round(x, 1) for x in append]
        for cache in ("cold", "warm"):
            if cache == "cold" and not drop_page_cache():
                out["cold_read"] = "skipped: dropping the page cache needs root"
                continue
            row = harness.catchup_phase(system, w, [topic], timeout_s=3600)
            out[f"{cache}_read_mb_s"] = round(row["consume_mb_s"], 1)
            out[f"{cache}_read_mb_s_per_gib"] = per_gib_rates(row["timeline_consume_mb_s"], gib)
            say(f"{name}: {cache} read at {row['consume_mb_s']:.0f} MiB/s")
        out["steps"] = steps(out, gib, step)
        out["fitted"] = fitted(out)
    finally:
        system.stop()
    return out


def per_gib_rates(timeline_mb_s: list[float], gib: int) -> list[float]:
    """MiB/s over each GiB read, from a per-second timeline of MiB read. The moment each GiB
    is complete is interpolated within its second: whole seconds would round a GiB read in
    1.5 s to 1 or 2 s."""
    rates: list[float] = []
    got, last_done = 0.0, 0.0
    for second, mb in enumerate(timeline_mb_s):
        while mb > 0 and len(rates) < gib and got + mb >= (len(rates) + 1) * 1024:
            done = second + ((len(rates) + 1) * 1024 - got) / mb
            rates.append(round(1024 / max(done - last_done, 1e-9), 1))
            last_done = done
        got += mb
    return rates


def fitted(out: dict[str, Any]) -> dict[str, Any]:
    """Each rate series' least-squares line, read at its first and last GiB: on a noisy
    machine one GiB's rate moves by a third from the next, while a rate that falls as the log
    grows shows as a slope."""
    rows: dict[str, Any] = {}
    for key in ("append_mb_s_per_gib", "cold_read_mb_s_per_gib", "warm_read_mb_s_per_gib"):
        series = out.get(key)
        if not series or len(series) < 2:
            continue
        xs = list(range(1, len(series) + 1))
        slope, intercept = statistics.linear_regression(xs, series)
        first, last = intercept + slope, intercept + slope * len(series)
        name = key.removesuffix("_mb_s_per_gib")
        rows[name] = {
            "at_first_gib_mb_s": round(first, 1),
            "at_last_gib_mb_s": round(last, 1),
            "last_vs_first": round(last / first, 3) if first > 0 else None,
        }
    return rows


def steps(out: dict[str, Any], gib: int, step: int) -> list[dict[str, Any]]:
    """Rates per step, each as the mean over its GiBs, and against the first GiB's."""
    rows = []
    for end in sorted({1, *range(step, gib + 1, step)}):
        row: dict[str, Any] = {"at_gib": end}
        for key in ("append_mb_s_per_gib", "cold_read_mb_s_per_gib", "warm_read_mb_s_per_gib"):
            series = out.get(key)
            if not series or len(series) < end:
                continue
            chunk = series[max(0, end - step) : end] if end > 1 else series[:1]
            rate = statistics.mean(chunk)
            name = key.removesuffix("_mb_s_per_gib")
            row[f"{name}_mb_s"] = round(rate, 1)
            row[f"{name}_vs_first_gib"] = round(rate / series[0], 3) if series[0] else None
        rows.append(row)
    return rows


PER_CLUSTER_TOPIC = 100
CLUSTER_TIMEOUT_S = 1800


def cluster_metadata(bootstrap: str, topics: list[str]) -> dict[str, list[Any]] | None:
    """Topic -> its partitions' metadata, from the broker at `bootstrap` alone; None when
    it does not answer."""
    from kafkalite import _core
    from kafkalite.errors import KafkaliteError

    try:
        with _core.KafkaClient(bootstrap, request_timeout_ms=60_000) as c:
            md = c.metadata(topics)
    except (KafkaliteError, OSError, RuntimeError):
        return None
    return {name: list(t.partitions) for name, t in md.topics.items() if not t.error_code}


def all_led(bootstrap: str, topics: dict[str, int], dead: int = -1) -> bool:
    md = cluster_metadata(bootstrap, list(topics))
    if md is None:
        return False
    return all(
        len(md.get(t, [])) == n and all(p.leader >= 0 and p.leader != dead for p in md[t])
        for t, n in topics.items()
    )


def wait_everywhere(
    cl: Any, topics: dict[str, int], since: float, brokers: list[int], dead: int = -1
) -> float:
    """Seconds from `since` until every broker in `brokers` shows every partition led (by
    a broker other than `dead`)."""
    pending = set(brokers)
    while pending:
        for b in sorted(pending):
            if all_led(cl.broker_bootstrap(b), topics, dead):
                pending.discard(b)
        if time.monotonic() - since > CLUSTER_TIMEOUT_S:
            raise TimeoutError(f"brokers {sorted(pending)} never showed every partition led")
        if pending:
            time.sleep(0.1 if sum(topics.values()) <= 2000 else 0.5)
    return time.monotonic() - since


def create_batch(cl: Any, names: list[str]) -> float:
    """One CreateTopics of `names` (PER_CLUSTER_TOPIC partitions each, RF 3); seconds
    until answered."""
    from confluent_kafka.admin import AdminClient, NewTopic

    # librdkafka's longest request timeout (socket.timeout.ms, default 60 s): a batch is
    # timed to its answer however long it takes, and one slower than the default is
    # flagged in the results.
    admin = AdminClient(
        {"bootstrap.servers": cl.bootstrap, "socket.timeout.ms": 300_000, "log_level": 0}
    )
    start = time.monotonic()
    futures = admin.create_topics(
        [NewTopic(n, PER_CLUSTER_TOPIC, 3) for n in names],
        operation_timeout=CLUSTER_TIMEOUT_S,
        request_timeout=CLUSTER_TIMEOUT_S,
    )
    for f in futures.values():
        f.result(CLUSTER_TIMEOUT_S)
    return time.monotonic() - start


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def idle_usage(cl: Any, seconds: float) -> dict[str, Any]:
    """CPU cores used over `seconds` with no client activity, and RSS, per process."""
    pids = cl.process_pids()
    hz = os.sysconf("SC_CLK_TCK")
    before = {k: cpu_ticks(p) for k, p in pids.items()}
    start = time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - start
    cores = {k: round((cpu_ticks(p) - before[k]) / hz / took, 3) for k, p in pids.items()}
    rss = {}
    for k, p in pids.items():
        s = sample([p], k)
        rss[k] = round(s.rss_bytes / MIB, 1) if s is not None else None
    return {
        "idle_cores": cores,
        "idle_cores_total": round(sum(cores.values()), 3),
        "rss_mib": rss,
        "rss_mib_total": round(sum(v for v in rss.values() if v), 1),
        "idle_seconds": round(took, 1),
    }


def isr_back(cl: Any, topics: dict[str, int], broker: int) -> bool:
    for b in cl.broker_ids:
        md = cluster_metadata(cl.broker_bootstrap(b), list(topics))
        if md is None or any(
            len(md.get(t, [])) != n or any(broker not in p.isr for p in md[t])
            for t, n in topics.items()
        ):
            return False
    return True


def storm_and_restart(cl: Any, name: str, topics: dict[str, int], storm: dict[str, Any]) -> None:
    """SIGKILL of the broker leading the most partitions, the time until every survivor
    shows them all led; then its restart, the time until it is back in every ISR. Into
    `storm` as measured, so what was measured before a failure stays."""
    # The storm: the broker leading the most partitions.
    md = cluster_metadata(cl.broker_bootstrap(cl.broker_ids[0]), list(topics)) or {}
    led: dict[int, int] = {}
    for parts in md.values():
        for p in parts:
            led[p.leader] = led.get(p.leader, 0) + 1
    victim = max(led, key=lambda b: led[b])
    survivors = [b for b in cl.broker_ids if b != victim]
    storm.update(victim=victim, led_by_victim=led[victim], partitions=sum(topics.values()))
    try:
        storm["victim_was_controller"] = cl.controller_id() == victim
    except RuntimeError as e:
        storm["victim_was_controller"] = str(e)[-200:]
    start = time.monotonic()
    cl.kill(victim)
    storm["all_led_s"] = round(wait_everywhere(cl, topics, start, survivors, victim), 2)
    say(f"{name}: storm {storm}")
    start = time.monotonic()
    cl.restart(victim)
    storm["restart_process_s"] = round(time.monotonic() - start, 2)
    while not isr_back(cl, topics, victim):
        if time.monotonic() - start > CLUSTER_TIMEOUT_S:
            raise TimeoutError(f"broker {victim} not back in every ISR")
        time.sleep(0.5)
    storm["back_in_every_isr_s"] = round(time.monotonic() - start, 2)
    say(f"{name}: restart {storm}")


def cluster_case(name: str, counts: list[int], root: Path, idle_s: float) -> dict[str, Any]:
    from kafkalite.bench.clusters import make_cluster

    cl = make_cluster(name, root / f"{name}-cluster", 3, overrides={})
    out: dict[str, Any] = {"system": name, "settings": cl.settings, "steps": []}
    cl.start()
    try:
        topics: dict[str, int] = {}
        batch = counts[0] // PER_CLUSTER_TOPIC
        for count in counts:
            step: dict[str, Any] = {"partitions": count, "rf": 3}
            want = count // PER_CLUSTER_TOPIC
            names = [f"scale-{i}" for i in range(len(topics), want)]
            batches = [names[i : i + batch] for i in range(0, len(names), batch)]
            start = time.monotonic()
            answered = []
            for b in batches:
                answered.append(round(create_batch(cl, b), 2))
                topics.update({n: PER_CLUSTER_TOPIC for n in b})
                total = len(topics) * PER_CLUSTER_TOPIC
                say(f"{name}: {total:,} partitions, batch answered in {answered[-1]} s")
            step["batches"] = len(batches)
            step["batch_answered_s"] = answered
            step["batches_over_60_s"] = sum(1 for a in answered if a > 60)
            step["answered_s"] = round(time.monotonic() - start, 2)
            new = {n: PER_CLUSTER_TOPIC for n in names}
            step["everywhere_s"] = round(wait_everywhere(cl, new, start, cl.broker_ids), 2)
            say(f"{name}: {count:,} {step}")
            step.update(idle_usage(cl, idle_s))
            say(f"{name}: idle {step['idle_cores_total']} cores, {step['rss_mib_total']} MiB")
            out["steps"].append(step)
        out["storm"] = {}
        try:
            storm_and_restart(cl, name, topics, out["storm"])
        except Exception as e:  # the steps above stay a result
            out["storm"]["error"] = f"{type(e).__name__}: {str(e)[-500:]}"
            say(f"{name}: storm/restart failed: {out['storm']['error']}")
    finally:
        cl.stop()
    return out


def cluster_ratios(result: dict[str, Any]) -> dict[str, Any]:
    """kafkalite / Kafka for the issue's bars, when both ran."""
    by = {c["system"]: c for c in result["cases"] if "steps" in c}
    if not {"kafkalite", "kafka"} <= set(by):
        return {}
    lite, kafka = by["kafkalite"]["steps"], by["kafka"]["steps"]

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a is not None and b else None

    out: dict[str, Any] = {}
    for a, b in zip(lite, kafka, strict=False):
        n = a["partitions"]
        out[f"answered_{n}"] = ratio(a.get("answered_s"), b.get("answered_s"))
        out[f"everywhere_{n}"] = ratio(a.get("everywhere_s"), b.get("everywhere_s"))
        out[f"idle_cores_{n}"] = ratio(a.get("idle_cores_total"), b.get("idle_cores_total"))
        out[f"rss_{n}"] = ratio(a.get("rss_mib_total"), b.get("rss_mib_total"))
    sa, sb = by["kafkalite"].get("storm", {}), by["kafka"].get("storm", {})
    out["storm_all_led"] = ratio(sa.get("all_led_s"), sb.get("all_led_s"))
    out["restart_back_in_isr"] = ratio(sa.get("back_in_every_isr_s"), sb.get("back_in_every_isr_s"))
    return out


def cluster_markdown(result: dict[str, Any]) -> str:
    cases = [c for c in result["cases"] if "steps" in c]
    lines = ["| figure | " + " | ".join(c["system"] for c in cases) + " |"]
    lines.append("|---|" + "---|" * len(cases))
    prev = 0
    for k, step in enumerate(cases[0]["steps"] if cases else []):
        n, b = step["partitions"], step["batches"]
        size = (n - prev) // b
        label = f"{n:,} partitions RF 3 ({n - prev:,} new: {b} CreateTopics of {size:,})"
        prev = n
        for key, what in (
            ("answered_s", "answered, s"),
            ("everywhere_s", "all leaders on every broker, s"),
            ("idle_cores_total", "idle CPU, cores (all processes)"),
            ("rss_mib_total", "RSS, MiB (all processes)"),
        ):
            vals = [str(c["steps"][k].get(key, "-")) if k < len(c["steps"]) else "-" for c in cases]
            lines.append(f"| {label}: {what} | " + " | ".join(vals) + " |")
    for key, what in (
        ("led_by_victim", "storm: partitions the killed broker led"),
        ("all_led_s", "storm: all led on the survivors, s"),
        ("back_in_every_isr_s", "restart: back in every ISR, s"),
    ):
        vals = [str(c.get("storm", {}).get(key, "-")) for c in cases]
        lines.append(f"| {what} | " + " | ".join(vals) + " |")
    for c in result["cases"]:
        if "error" in c:
            lines.append(f"\n{c['system']} failed: {c['error']}")
        elif "error" in c.get("storm", {}):
            lines.append(f"\n{c['system']}'s storm or restart failed: {c['storm']['error']}")
    return "\n".join(lines) + "\n"


def plot_cluster(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        say("matplotlib is missing (pip install '.[bench]'): no plot")
        return False
    from kafkalite.bench.plots import colour

    cases = [c for c in result["cases"] if "steps" in c]
    if not cases:
        return False
    counts = [s["partitions"] for s in cases[0]["steps"]]
    batches = [s["batches"] for s in cases[0]["steps"]]
    panels = [
        ("answered_s", "CreateTopics answered (s)"),
        ("everywhere_s", "all leaders on every broker (s)"),
        ("idle_cores_total", "idle CPU, all processes (cores)"),
        ("rss_mib_total", "RSS, all processes (MiB)"),
    ]
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(16, 4))
    width = 0.8 / len(cases)
    for ax, (key, title) in zip(axes, panels, strict=False):
        for k, c in enumerate(cases):
            vals = [s.get(key, 0) or 0 for s in c["steps"]]
            xs = [j + k * width for j in range(len(vals))]
            ax.bar(xs, vals, width, color=colour(c["system"]), label=c["system"])
        ax.set_xticks(
            [j + width * (len(cases) - 1) / 2 for j in range(len(counts))],
            [f"{n:,}\n({b} CreateTopics)" for n, b in zip(counts, batches, strict=True)],
            fontsize=8,
        )
        ax.set_xlabel("partitions in the cluster, RF 3")
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=8)
    ax = axes[-1]
    for k, c in enumerate(cases):
        st = c.get("storm", {})
        vals = [st.get("all_led_s", 0), st.get("back_in_every_isr_s", 0)]
        ax.bar([j + k * width for j in range(2)], vals, width, color=colour(c["system"]))
    ax.set_xticks([j + width * (len(cases) - 1) / 2 for j in range(2)], ["storm", "restart"])
    ax.set_title(
        "SIGKILL of the top leader: all led;\nits restart: back in every ISR (s)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("partitions", help="create, serve and recover many partitions")
    p.add_argument("--counts", default="1000,10000", help="partition counts, comma-separated")
    p.add_argument("--systems", default="kafkalite,kafka", help="kafkalite and/or kafka")
    c = sub.add_parser("cluster", help="3-broker clusters: create, idle, storm, restart")
    c.add_argument("--counts", default="1000,10000", help="partition counts, comma-separated")
    c.add_argument("--systems", default="kafkalite,kafka", help="kafkalite and/or kafka")
    c.add_argument("--idle-s", type=float, default=25.0, help="seconds idle CPU is measured")
    v = sub.add_parser("volume", help="write and read back a log larger than memory")
    v.add_argument("--gb", type=int, default=50, help="GiB to write")
    v.add_argument("--step-gb", type=int, default=5, help="report rates per this many GiB")
    v.add_argument("--systems", default="kafkalite", help="kafkalite and/or kafka")
    for p_ in (p, c, v):
        p_.add_argument("--data-dir", type=Path, help="where brokers keep data")
        p_.add_argument("--out", type=Path, help="directory for the JSON and plot")
    args = ap.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    out = args.out or Path("bench-results") / f"scale-{args.what}-{time.strftime('%Y%m%dT%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with tempfile.TemporaryDirectory(dir=args.data_dir, prefix="kafkalite-scale-") as root:
        result: dict[str, Any] = {"bench": f"scale_{args.what}", "cases": []}
        for name in systems:
            if args.what == "cluster":
                counts = [int(x) for x in args.counts.split(",")]
                say(f"{name}: cluster, {counts}")
                try:
                    case = cluster_case(name, counts, Path(root), args.idle_s)
                except Exception as e:  # a system that cannot is a result too
                    case = {"system": name, "error": f"{type(e).__name__}: {str(e)[-500:]}"}
                say(json.dumps(case))
                result["cases"].append(case)
            elif args.what == "partitions":
                for count in (int(c) for c in args.counts.split(",")):
                    say(f"{name}: {count:,} partitions")
                    try:
                        case = partitions_case(name, count, Path(root))
                    except Exception as e:  # a system that cannot is a result too
                        case = {"system": name, "partitions": count, "error": str(e)[-500:]}
                    say(json.dumps(case))
                    result["cases"].append(case)
            else:
                result["cases"].append(volume_case(name, args.gb, args.step_gb, Path(root)))
    result["started"] = started
    result["command"] = " ".join(["python", "bench/scale.py", *sys.argv[1:]])
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    (out / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.what == "cluster":
        result["kafkalite_vs_kafka"] = cluster_ratios(result)
        (out / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "summary.md").write_text(cluster_markdown(result))
    if args.what == "cluster" and plot_cluster(result, out / "scale-cluster.png"):
        result["plot"] = str(out / "scale-cluster.png")
    if args.what == "volume" and plot_volume(result, out / "scale-volume.png"):
        result["plot"] = str(out / "scale-volume.png")
    print(json.dumps(result))


def plot_volume(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        say("matplotlib is missing (pip install '.[bench]'): no plot")
        return False
    from kafkalite.bench.plots import colour

    fig, ax = plt.subplots(figsize=(8, 4.5))
    styles = {"append": "-", "cold_read": ":", "warm_read": "--"}
    for case in result["cases"]:
        for kind, style in styles.items():
            series = case.get(f"{kind}_mb_s_per_gib")
            if series:
                ax.plot(
                    range(1, len(series) + 1),
                    series,
                    style,
                    color=colour(case["system"]),
                    label=f"{case['system']} {kind.replace('_', ' ')}",
                )
    ax.set_xlabel("GiB in the log")
    ax.set_ylabel("MiB/s over that GiB")
    ax.set_title("Append and read rate as the log grows")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


if __name__ == "__main__":
    main()
