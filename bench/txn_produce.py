"""Transactional produce, kafkalite against Apache Kafka side by side: one
confluent-kafka (librdkafka) transactional producer runs N transactions of
--records-per-txn records (--record-bytes each, spread over --partitions partitions),
each begin / produce / commit; the figure is committed records per second (and
transactions per second), median of --runs, each run on a fresh broker process (the
daemon for kafkalite, a KRaft node for Kafka, started the way the bench harness does).
Not a test; the last line is JSON with `txn_produce_ratio_vs_kafka` (kafkalite / Kafka).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from _common import median, scratch_dir
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.bench.systems import make_system


def one_run(system: str, base: Path, args: argparse.Namespace) -> dict[str, float]:
    broker = make_system(system, base / system / "data")
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("txn", args.partitions, 1)])["txn"].result(30)
        p = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "transactional.id": f"bench-{time.monotonic_ns()}",
                "linger.ms": 5,
            }
        )
        p.init_transactions(60)
        value = os.urandom(args.record_bytes)
        # One warm-up transaction (coordinator lookup, internal topic creation).
        p.begin_transaction()
        p.produce("txn", value=value)
        p.commit_transaction(60)
        start = time.perf_counter()
        for t in range(args.txns):
            p.begin_transaction()
            for i in range(args.records_per_txn):
                p.produce("txn", value=value, partition=(t + i) % args.partitions)
            p.commit_transaction(60)
        elapsed = time.perf_counter() - start
        records = args.txns * args.records_per_txn
        return {
            "records_per_s": records / elapsed,
            "txns_per_s": args.txns / elapsed,
            "mb_per_s": records * args.record_bytes / elapsed / 1e6,
        }
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--txns", type=int, default=500, help="transactions per run")
    parser.add_argument("--records-per-txn", type=int, default=100, help="records per transaction")
    parser.add_argument("--record-bytes", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the topic")
    parser.add_argument("--runs", type=int, default=3, help="runs per system (median)")
    args = parser.parse_args()
    base = scratch_dir("txn_produce")
    results: dict[str, dict[str, float]] = {}
    for system in ("kafkalite", "kafka"):
        runs = [one_run(system, base, args) for _ in range(args.runs)]
        results[system] = {k: median([r[k] for r in runs]) for k in runs[0]}
        r = results[system]
        print(
            f"{system}: {args.txns} transactions of {args.records_per_txn} records, "
            f"{r['records_per_s']:.0f} records/sec ({r['mb_per_s']:.2f} MB/sec), "
            f"{r['txns_per_s']:.1f} transactions/sec (median of {args.runs})",
            flush=True,
        )
    ratio = results["kafkalite"]["records_per_s"] / results["kafka"]["records_per_s"]
    print(
        json.dumps(
            {
                "workload": "txn_produce",
                "txns": args.txns,
                "records_per_txn": args.records_per_txn,
                "record_bytes": args.record_bytes,
                "partitions": args.partitions,
                "runs": args.runs,
                "kafkalite": results["kafkalite"],
                "kafka": results["kafka"],
                "txn_produce_ratio_vs_kafka": round(ratio, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
