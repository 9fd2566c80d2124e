"""Log compaction throughput: MB of log examined per second by a forced cleaner pass, and
the same pass run by a live broker while a producer keeps appending. Not a test; the last
line is JSON.

The log holds `--keys` keys x `--versions` versions of `--value-bytes` values (the last
version live, every tenth key ended by a tombstone), in `--segment-mib` segments; a pass
maps the dirty section and rewrites every closed segment, so "MB/s" is (bytes mapped +
bytes filtered) / wall time of the whole pass, including fsync of the cleaned segments.
Median of `--runs`, each on a fresh log after a page-cache warm-up write.
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from _common import MIB, median, scratch_dir, warm_page_cache

from kafkalite import Broker, _core


def fill(log: _core.PartitionLog, keys: int, versions: int, value_bytes: int) -> int:
    per_batch = 500
    written = 0
    for version in range(versions):
        for start in range(0, keys, per_batch):
            records = [
                (b"key-%08d" % k, b"%d" % version + b"x" * value_bytes, 0)
                for k in range(start, min(start + per_batch, keys))
            ]
            batch = _core.build_batch(records, "none")
            written += len(batch)
            log.append(batch)
    tombstones = _core.build_batch([(b"key-%08d" % k, None, 0) for k in range(0, keys, 10)], "none")
    written += len(tombstones)
    log.append(tombstones)
    log.roll()
    return written


def one_pass(args: argparse.Namespace, run: int) -> dict[str, float]:
    base = scratch_dir(f"compaction-{run}")
    warm_page_cache(base, args.warmup_mib * MIB)
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": args.segment_mib * MIB,
        "delete.retention.ms": 0,
    }
    with _core.PartitionLog(base / "t-0", config) as log:
        written = fill(log, args.keys, args.versions, args.value_bytes)
        stats = log.compact(force=True)
    return {
        "log_mb": written / 1e6,
        "mb_per_sec": stats.mb_per_sec,
        "bytes_before_mb": stats.bytes_before / 1e6,
        "bytes_after_mb": stats.bytes_after / 1e6,
        "duration_ms": stats.duration_ms,
    }


def broker_pass(args: argparse.Namespace) -> dict[str, float]:
    """A pass run by a live broker while a confluent-kafka producer appends to another
    partition: the cleaner must not stall produce."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data = scratch_dir("compaction-broker")
    with Broker(log_dirs=data, config={"log.cleaner.enable": "false"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        topic_config = {"cleanup.policy": "compact", "segment.bytes": str(args.segment_mib * MIB)}
        admin.create_topics([NewTopic("table", 2, 1, config=topic_config)])["table"].result(10)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        value = b"x" * args.value_bytes
        for _ in range(args.versions):
            for k in range(args.keys // 4):
                producer.produce("table", key=b"key-%08d" % k, value=value, partition=0)
                if k % 10_000 == 0:
                    producer.poll(0)
            producer.flush(60)
        stop = threading.Event()
        acks: list[float] = []

        def keep_producing() -> None:
            p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
            while not stop.is_set():
                sent = time.perf_counter()
                p.produce("table", key=b"live", value=b"v", partition=1)
                p.flush(10)
                acks.append(time.perf_counter() - sent)

        thread = threading.Thread(target=keep_producing)
        thread.start()
        try:
            ((_, _, stats),) = [c for c in broker.compact("table") if c[1] == 0]
        finally:
            stop.set()
            thread.join()
    acks.sort()
    return {
        "broker_mb_per_sec": stats.mb_per_sec,
        "acks_during_pass": len(acks),
        "ack_p99_ms": acks[int(len(acks) * 0.99)] * 1000 if acks else float("nan"),
        "ack_max_ms": acks[-1] * 1000 if acks else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--segment-mib", type=int, default=64)
    parser.add_argument("--warmup-mib", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer keys, one run")
    args = parser.parse_args()
    if args.quick:
        args.keys, args.runs = 50_000, 1
    runs = [one_pass(args, i) for i in range(args.runs)]
    for r in runs:
        print(
            f"{r['log_mb']:.0f} MB log -> {r['bytes_after_mb']:.1f} MB in "
            f"{r['duration_ms']:.0f} ms: {r['mb_per_sec']:.0f} MB/s"
        )
    live = broker_pass(args)
    print(
        f"broker pass beside a producer: {live['broker_mb_per_sec']:.0f} MB/s; "
        f"{live['acks_during_pass']} acks meanwhile, p99 {live['ack_p99_ms']:.1f} ms, "
        f"max {live['ack_max_ms']:.1f} ms"
    )
    summary = {
        "log_mb": runs[0]["log_mb"],
        "compaction_mb_per_sec": median([r["mb_per_sec"] for r in runs]),
        "runs": len(runs),
        **live,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
