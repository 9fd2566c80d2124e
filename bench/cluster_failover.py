"""Failover side by side: kafkalite's `Cluster(brokers=3)` and a 3-node Apache Kafka KRaft
cluster (every node broker + controller), both at their defaults, one after the other in
one run. Not a test; the last line printed is JSON, also written to --out.

    python bench/cluster_failover.py --kills 12 --pauses 12 --group-rounds 3 \\
        --txn-rounds 3 --out bench/results/cluster-failover

Under load: one idempotent acks=all producer (kafkalite.chaos.checker.Writers, numbered
records) writes --rate records/s to a 6-partition RF 3 topic for the whole run.

- kill rounds (--kills): SIGKILL a broker that leads partitions of the topic, then restart
  it. Round i (i % 3 == 0) kills the controller's broker (kafkalite: the broker holding
  /controller in ZooKeeper; Kafka: the active KRaft controller, from
  kafka-metadata-quorum), the others the leader of partition i % 6.
- pause rounds (--pauses), in a row: SIGSTOP the same way chosen broker, SIGCONT 2 s after
  its replacement is visible everywhere.

  Time of a round: from the signal until EVERY surviving broker, asked with a fresh
  client bootstrapped to it alone (a raw Metadata request, polled every ~20 ms), shows a
  leader other than the victim for every partition the victim led. `first` is the same
  for the first survivor that shows it. Before each round the cluster is made whole: all
  replicas back in every ISR, preferred leaders elected (so every broker leads some
  partitions), as every broker sees it. A round that sees no new leader in --round-timeout
  seconds counts as that timeout and is marked.
- checks, after the rounds: the topic read back from the beginning and compared with the
  producer's acknowledgements: lost, duplicated, reordered (kafkalite.chaos.checker);
  offsets moved backwards (a later-acknowledged record of a partition at a lower offset
  than an earlier one) and offsets rewritten (the acknowledged offset holds another
  record).
- group rounds (--group-rounds, each for the classic protocol and KIP-848's
  group.protocol=consumer, confluent-kafka at its defaults otherwise): a group consumes a
  2-partition topic kept off its coordinator's broker (RF 2 on the other two), commits,
  the coordinator's broker is SIGKILLed and 20 records are produced; resume = from the
  kill until the group has read all 20 and a synchronous commit succeeded; first = until
  the first of them arrives.
- transaction rounds (--txn-rounds): a transactional producer has an open transaction
  with records in it (on a topic kept off the coordinator's broker); its transaction
  coordinator's broker is SIGKILLed; resume = from the kill until commit_transaction()
  returns, having committed.

The machine's load average is sampled every 5 s during each system's part.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import _core
from kafkalite.bench.clusters import KafkaCluster, KafkaliteCluster, make_cluster
from kafkalite.chaos.checker import Writers, check, offset_anomalies, read_all
from kafkalite.errors import KafkaliteError

TOPIC = "failover"
PARTITIONS = 6
POLL_S = 0.02
Cl = KafkaliteCluster | KafkaCluster


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def leaders(bootstrap: str, topic: str, timeout_ms: int = 3000) -> dict[int, Any]:
    """Partition -> PartitionMetadata as the broker at `bootstrap` answers, through a new
    connection; {} when it cannot answer."""
    try:
        with _core.KafkaClient(bootstrap, request_timeout_ms=timeout_ms) as c:
            t = c.metadata([topic]).topics.get(topic)
    except (KafkaliteError, OSError, RuntimeError):
        return {}
    if t is None or t.error_code:
        return {}
    return {p.partition: p for p in t.partitions}


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout:g} s")
        time.sleep(every)


class LoadSampler:
    """The 1-minute load average every 5 s while running."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(5)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        s = self.samples or [os.getloadavg()[0]]
        return {"mean": round(statistics.fmean(s), 2), "max": round(max(s), 2)}


def admin_for(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(cl: Cl, name: str, partitions: int, assignment: list[list[int]] | None) -> None:
    new = (
        NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)
        if assignment
        else NewTopic(name, partitions, 3)
    )
    admin = admin_for(cl.bootstrap)  # kept: a dropped client fails its futures
    admin.create_topics([new], operation_timeout=60)[name].result(90)
    n = len(assignment) if assignment else partitions
    wait_for(
        lambda: all(
            len(ls := leaders(cl.broker_bootstrap(b), name)) == n
            and all(p.leader >= 0 for p in ls.values())
            for b in cl.broker_ids
        ),
        120,
        f"leaders of {name} on every broker",
    )


def make_whole(cl: Cl, topic: str, timeout: float = 300) -> dict[int, Any]:
    """Until every replica is back in every ISR and the preferred leaders lead, as every
    broker answers; the partitions' metadata then."""

    def isr_full() -> bool:
        for b in cl.broker_ids:
            ls = leaders(cl.broker_bootstrap(b), topic)
            if len(ls) != PARTITIONS or any(set(p.isr) != set(p.replicas) for p in ls.values()):
                return False
        return True

    wait_for(isr_full, timeout, "every replica back in the ISR")

    def preferred() -> dict[int, Any] | None:
        seen = None
        for b in cl.broker_ids:
            ls = leaders(cl.broker_bootstrap(b), topic)
            if len(ls) != PARTITIONS or any(p.leader != p.replicas[0] for p in ls.values()):
                return None
            seen = ls
        return seen

    if preferred() is None:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        admin = admin_for(cl.bootstrap)
        try:
            admin.elect_leaders(ElectionType.PREFERRED, tps).result(30)
        except KafkaException as e:  # ELECTION_NOT_NEEDED for some is fine
            log(f"elect_leaders: {e}")
    return wait_for(preferred, 60, "preferred leaders on every broker")


def time_new_leaders(
    cl: Cl, topic: str, victim: int, led: list[int], timeout: float
) -> tuple[float, float, bool]:
    """(first survivor, every survivor, timed out) seconds from now until a survivor's own
    Metadata shows a leader other than `victim` (and not none) for every partition in
    `led`."""
    t0 = time.monotonic()
    survivors = [b for b in cl.broker_ids if b != victim]
    done: dict[int, float] = {}
    while len(done) < len(survivors):
        now = time.monotonic()
        if now - t0 > timeout:
            first = min(done.values(), default=timeout)
            return first, timeout, True
        for s in survivors:
            if s in done:
                continue
            ls = leaders(cl.broker_bootstrap(s), topic, timeout_ms=2000)
            if ls and all(p in ls and ls[p].leader not in (victim, -1) for p in led):
                done[s] = time.monotonic() - t0
        time.sleep(POLL_S)
    return min(done.values()), max(done.values()), False


def pick_victim(cl: Cl, i: int, md: dict[int, Any]) -> tuple[int, bool]:
    controller = cl.controller_id()
    leading = {p.leader for p in md.values()}
    if i % 3 == 0 and controller in leading:
        return controller, True
    victim = md[i % PARTITIONS].leader
    return victim, victim == controller


def fault_rounds(cl: Cl, kind: str, count: int, timeout: float) -> list[dict[str, Any]]:
    rounds: list[dict[str, Any]] = []
    for i in range(count):
        md = make_whole(cl, TOPIC)
        victim, is_controller = pick_victim(cl, i, md)
        led = sorted(p for p, m in md.items() if m.leader == victim)
        if kind == "kill":
            cl.kill(victim)
        else:
            cl.pause(victim)
        first, every, timed_out = time_new_leaders(cl, TOPIC, victim, led, timeout)
        row = {
            "round": i,
            "victim": victim,
            "controller": is_controller,
            "partitions": len(led),
            "first_s": round(first, 3),
            "every_s": round(every, 3),
            "timed_out": timed_out,
        }
        log(f"{cl.name} {kind} {row}")
        rounds.append(row)
        if kind == "kill":
            cl.restart(victim)
        else:
            time.sleep(2.0)
            cl.resume(victim)
    return rounds


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    every = [r["every_s"] for r in rounds]
    first = [r["first_s"] for r in rounds]
    ctrl = [r["every_s"] for r in rounds if r["controller"]]
    if not every:
        return {}
    return {
        "count": len(every),
        "median_s": round(statistics.median(every), 3),
        "worst_s": round(max(every), 3),
        "first_median_s": round(statistics.median(first), 3),
        "controller_rounds": len(ctrl),
        "controller_worst_s": round(max(ctrl), 3) if ctrl else None,
        "timed_out": sum(r["timed_out"] for r in rounds),
    }


def resume_summary(times: list[float]) -> dict[str, Any]:
    if not times:
        return {}
    return {
        "count": len(times),
        "median_s": round(statistics.median(times), 3),
        "worst_s": round(max(times), 3),
    }


def offsets_check(writers: Writers, bootstrap: str) -> dict[str, int]:
    """Offsets moved backwards or rewritten (kafkalite.chaos.checker.offset_anomalies)."""
    got = offset_anomalies(writers.acked_offsets, read_all(bootstrap, TOPIC, 120))
    return {
        "offsets_backwards": got["backwards"],
        "offsets_rewritten": got["rewritten"],
        "acked_without_offset": got["without_offset"],
    }


@contextmanager
def survivors_producer(bootstrap: str, config: dict[str, Any] | None = None) -> Iterator[Producer]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **(config or {})})
    try:
        yield p
    finally:
        p.flush(30)


def find_coordinator(cl: Cl, key: str, key_type: int) -> int:
    def ask() -> int | None:
        try:
            with _core.KafkaClient(cl.bootstrap, request_timeout_ms=5000) as c:
                return c.find_coordinator(key, key_type)[0]
        except (KafkaliteError, OSError, RuntimeError):
            return None  # the internal topic is being created

    return int(wait_for(ask, 120, f"coordinator of {key}", 0.5))


def other_two(cl: Cl, victim: int) -> list[int]:
    return [b for b in cl.broker_ids if b != victim]


def group_round(cl: Cl, protocol: str, i: int) -> dict[str, Any]:
    group = f"{protocol}-group-{i}"
    victim = find_coordinator(cl, group, 0)
    a, b = other_two(cl, victim)
    topic = f"{protocol}-events-{i}"
    create_topic(cl, topic, 2, [[a, b], [b, a]])
    survivors = f"{cl.broker_bootstrap(a)},{cl.broker_bootstrap(b)}"
    conf: dict[str, Any] = {
        "bootstrap.servers": cl.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "log_level": 0,
    }
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    consumer = Consumer(conf)
    seen: set[bytes] = set()
    killed = 0.0

    def poll() -> None:
        for m in consumer.consume(100, 0.05):
            if m.error() is None and m.value() is not None:
                seen.add(m.value())

    try:
        with survivors_producer(survivors) as producer:

            def produce(prefix: str) -> set[bytes]:
                values = [f"{prefix}-{k}".encode() for k in range(20)]
                for k, v in enumerate(values):
                    producer.produce(topic, v, partition=k % 2)
                producer.flush(30)
                return set(values)

            before = produce("before")
            consumer.subscribe([topic])
            wait_for(lambda: poll() or before <= seen, 120, "the group consumes", 0)
            consumer.commit(asynchronous=False)
            cl.kill(victim)
            killed = time.monotonic()
            after = produce("after")
            first_at: list[float] = []

            def resumed() -> bool:
                poll()
                if seen & after and not first_at:
                    first_at.append(time.monotonic() - killed)
                if not after <= seen:
                    return False
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException:
                    return False
                return True

            wait_for(resumed, 120, f"{protocol} group resumes", 0)
            resume = time.monotonic() - killed
    finally:
        consumer.close()
        if killed:
            cl.restart(victim)
    row = {
        "protocol": protocol,
        "victim": victim,
        "resume_s": round(resume, 3),
        "first_record_s": round(first_at[0], 3),
    }
    log(f"{cl.name} group {row}")
    return row


def txn_round(cl: Cl, i: int) -> dict[str, Any]:
    txn_id = f"txn-{i}"
    victim = find_coordinator(cl, txn_id, 1)
    a, b = other_two(cl, victim)
    topic = f"txn-events-{i}"
    create_topic(cl, topic, 1, [[a, b]])
    producer = Producer(
        {"bootstrap.servers": cl.bootstrap, "transactional.id": txn_id, "log_level": 0}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, b"warm-up")
    producer.commit_transaction(60)
    producer.begin_transaction()
    for k in range(10):
        producer.produce(topic, f"in-flight-{k}".encode())
    producer.flush(30)
    cl.kill(victim)
    killed = time.monotonic()
    attempts = 0
    try:
        while True:
            attempts += 1
            try:
                producer.commit_transaction(60)
                break
            except KafkaException as e:
                err: KafkaError = e.args[0]
                if err.fatal() or time.monotonic() - killed > 120:
                    raise
                if err.txn_requires_abort():
                    producer.abort_transaction(60)
                    producer.begin_transaction()
                    producer.produce(topic, b"again")
                # retriable: commit again
        resume = time.monotonic() - killed
        producer.flush(10)
    finally:
        cl.restart(victim)
    row = {"victim": victim, "resume_s": round(resume, 3), "commit_attempts": attempts}
    log(f"{cl.name} txn {row}")
    return row


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def run_system(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cl = make_cluster(name, work / name, 3, overrides={})
    out: dict[str, Any] = {"system": name, "settings": cl.settings}
    log(f"starting {name}")
    t0 = time.monotonic()
    cl.start()
    try:
        out["start_s"] = round(time.monotonic() - t0, 2)
        out["rss_kib"] = {k: rss_kib(p) for k, p in cl.process_pids().items()}
        with LoadSampler() as load:
            create_topic(cl, TOPIC, PARTITIONS, None)
            writers = Writers(
                cl.bootstrap,
                TOPIC,
                writers=1,
                rate=args.rate,
                # Long enough to ride out any round: a failed write is no loss, but the
                # check is stronger with everything acknowledged.
                config={"message.timeout.ms": 300000, "log_level": 0},
            ).start()
            writers.wait_acked(50, 60)
            out["kill"] = fault_rounds(cl, "kill", args.kills, args.round_timeout)
            out["pause"] = fault_rounds(cl, "pause", args.pauses, args.round_timeout)
            writers.stop()
            log(f"{name}: checking {writers.acked_count} acknowledged writes")
            result = check(writers, cl.bootstrap, TOPIC, 180)
            out["check"] = {
                **result.as_dict(),
                "errors": dict(writers.errors),
                **offsets_check(writers, cl.bootstrap),
            }
            log(f"{name}: {result.summary()}")
            out["groups"] = []
            for protocol in ("classic", "consumer"):
                for i in range(args.group_rounds):
                    try:
                        out["groups"].append(group_round(cl, protocol, i))
                    except Exception as e:  # a round that fails is a result too
                        out["groups"].append({"protocol": protocol, "error": repr(e)[-500:]})
                        log(f"{name} group {protocol} {i}: {e}")
            out["txn"] = []
            for i in range(args.txn_rounds):
                try:
                    out["txn"].append(txn_round(cl, i))
                except Exception as e:  # a round that fails is a result too
                    out["txn"].append({"error": repr(e)[-500:]})
                    log(f"{name} txn {i}: {e}")
        out["load_average"] = load.summary()
    finally:
        cl.stop()
    out["kill_summary"] = summary(out.get("kill", []))
    out["pause_summary"] = summary(out.get("pause", []))
    for key, rows in (("classic", "groups"), ("consumer", "groups"), ("txn", "txn")):
        ok = [
            r["resume_s"]
            for r in out.get(rows, [])
            if "resume_s" in r and (rows == "txn" or r.get("protocol") == key)
        ]
        out[f"{key}_resume"] = resume_summary(ok)
    return out


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kafkalite.bench.plots import colour

    panels = [("kill", "SIGKILL of a leader"), ("pause", "SIGSTOP of a leader")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for ax, (kind, title) in zip(axes, panels, strict=False):
        for k, r in enumerate(results):
            ys = [x["every_s"] for x in r.get(kind, [])]
            xs = [k + (j - len(ys) / 2) * 0.03 for j in range(len(ys))]
            ctrl = [x["controller"] for x in r.get(kind, [])]
            ax.scatter(
                [x for x, c in zip(xs, ctrl, strict=True) if not c],
                [y for y, c in zip(ys, ctrl, strict=True) if not c],
                color=colour(r["system"]),
                s=18,
            )
            ax.scatter(
                [x for x, c in zip(xs, ctrl, strict=True) if c],
                [y for y, c in zip(ys, ctrl, strict=True) if c],
                color=colour(r["system"]),
                marker="x",
                s=30,
            )
            if ys:
                ax.hlines(statistics.median(ys), k - 0.3, k + 0.3, color="black", lw=1)
        ax.set_xticks(range(len(results)), [r["system"] for r in results])
        ax.set_title(f"{title}\n(x: the controller's broker; bar: median)", fontsize=9)
        ax.set_ylabel("s until every survivor shows new leaders")
        ax.set_ylim(bottom=0)
    ax = axes[2]
    labels = ["classic group", "KIP-848 group", "transaction"]
    width = 0.8 / max(1, len(results))
    for k, r in enumerate(results):
        vals = [
            r.get(f"{key}_resume", {}).get("median_s", 0) for key in ("classic", "consumer", "txn")
        ]
        worst = [
            r.get(f"{key}_resume", {}).get("worst_s", 0) for key in ("classic", "consumer", "txn")
        ]
        xs = [j + k * width for j in range(3)]
        ax.bar(xs, vals, width, color=colour(r["system"]), label=r["system"])
        ax.scatter(xs, worst, color="black", marker="_", s=80)
    ax.set_xticks([j + width * (len(results) - 1) / 2 for j in range(3)], labels, fontsize=8)
    ax.set_title("resume after SIGKILL of the coordinator\n(bar: median, dash: worst)", fontsize=9)
    ax.set_ylabel("s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def markdown(report: dict[str, Any]) -> str:
    """The figures as a Markdown table, one column per system (summary.md)."""
    systems = report["systems"]

    def fig(sysrow: dict[str, Any], key: str) -> str:
        got = sysrow.get(key) or {}
        if not got:
            return "-"
        text = f"{got['median_s']:.2f} / {got['worst_s']:.2f}"
        if got.get("timed_out"):
            text += f" ({got['timed_out']} timed out)"
        return text

    def check(sysrow: dict[str, Any]) -> str:
        c = sysrow.get("check", {})
        return (
            f"{c.get('acked', 0):,} acked: lost {c.get('lost')}, dup {c.get('duplicated')}, "
            f"backwards {c.get('offsets_backwards')}, rewritten {c.get('offsets_rewritten')}"
        )

    def failed(sysrow: dict[str, Any]) -> str:
        bad = [r for r in sysrow.get("groups", []) + sysrow.get("txn", []) if "error" in r]
        return str(len(bad))

    rows = [
        ("SIGKILL of a leader, s (median / worst)", lambda r: fig(r, "kill_summary")),
        (
            "  of them the controller's broker: rounds, worst s",
            lambda r: (
                f"{r['kill_summary'].get('controller_rounds')}, "
                f"{r['kill_summary'].get('controller_worst_s')}"
            ),
        ),
        ("SIGSTOP of a leader, in a row, s (median / worst)", lambda r: fig(r, "pause_summary")),
        (
            "  of them the controller's broker: rounds, worst s",
            lambda r: (
                f"{r['pause_summary'].get('controller_rounds')}, "
                f"{r['pause_summary'].get('controller_worst_s')}"
            ),
        ),
        ("classic group resume, s (median / worst)", lambda r: fig(r, "classic_resume")),
        ("KIP-848 group resume, s (median / worst)", lambda r: fig(r, "consumer_resume")),
        ("transaction commit resume, s (median / worst)", lambda r: fig(r, "txn_resume")),
        ("group/transaction rounds that failed", failed),
        ("records checked", check),
        ("cluster start, s", lambda r: f"{r.get('start_s')}"),
        (
            "RSS after start, MiB (every process)",
            lambda r: ", ".join(f"{k} {v / 1024:.0f}" for k, v in r.get("rss_kib", {}).items()),
        ),
        (
            "load average during the part (mean / max)",
            lambda r: (
                f"{r['load_average']['mean']} / {r['load_average']['max']}"
                if r.get("load_average")
                else "-"
            ),
        ),
    ]
    head = "| figure | " + " | ".join(r["system"] for r in systems) + " |"
    lines = [head, "|---|" + "---|" * len(systems)]
    for label, f in rows:
        lines.append(f"| {label} | " + " | ".join(f(r) for r in systems) + " |")
    return "\n".join(lines) + "\n"


def commit_id() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent,
    )
    return done.stdout.strip() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--systems", default="kafkalite,kafka")
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--pauses", type=int, default=12)
    ap.add_argument("--group-rounds", type=int, default=3)
    ap.add_argument("--txn-rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=200.0, help="records/s of the load")
    ap.add_argument("--round-timeout", type=float, default=90.0)
    ap.add_argument("--out", type=Path, help="directory for results.json and failover.png")
    args = ap.parse_args()
    results = []
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="kafkalite-failover-") as tmp:
        for name in args.systems.split(","):
            results.append(run_system(name, args, Path(tmp)))
    report = {
        "started": started,
        "commit": commit_id(),
        "command": " ".join(["python", "bench/cluster_failover.py", *sys.argv[1:]]),
        "cpus": os.cpu_count(),
        "systems": results,
    }
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "summary.md").write_text(markdown(report))
        plot(results, args.out / "failover.png")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
