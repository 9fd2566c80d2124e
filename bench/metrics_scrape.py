"""The metrics endpoint under load: does it tell the truth, and what does it cost?

A kafkalite broker daemon with `metrics.listen` takes the max-throughput producers of the
bench harness for --seconds while this script scrapes it once a second. It reports the
bytes-in rate the scrapes show over the producers' measurement window against the
producers' own figure, then the broker CPU one scrape costs (200 scrapes timed on the same
broker) as a fraction of the broker's CPU per second under that load: the cost of scraping
at 1 scrape/s. Last line: JSON (`bytes_in_rate_vs_bench`, `scrape_cpu_fraction_at_1hz`).

    python bench/metrics_scrape.py [--seconds 20] [--partitions 1000]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from kafkalite.bench import harness
from kafkalite.bench.systems import Kafkalite
from kafkalite.bench.topics import create_topics
from kafkalite.bench.workload import Workload
from kafkalite.monitoring import scrape

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20, help="produce phase length")
    ap.add_argument(
        "--partitions", type=int, default=0, help="extra idle partitions (scrape size grows)"
    )
    args = ap.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    w = Workload(
        name="metrics-scrape",
        partitions_per_topic=4,
        producers_per_topic=2,
        consumer_per_subscription=0,
        test_duration_seconds=args.seconds,
        warmup_seconds=min(5, args.seconds / 4),
    )
    with tempfile.TemporaryDirectory() as root:
        broker = Kafkalite(Path(root) / "data", overrides={"metrics.listen": f"127.0.0.1:{port}"})
        broker.start()
        try:
            create_topics(broker.bootstrap, ["scrape-load"], w.partitions_per_topic)
            if args.partitions:
                create_topics(broker.bootstrap, ["scrape-idle"], args.partitions)
            samples: list[tuple[float, float]] = []
            stop = threading.Event()

            def scraper() -> None:
                while not stop.wait(1.0):
                    value = scrape.value(scrape.fetch(url), BYTES_IN, topic="scrape-load")
                    samples.append((time.time(), value or 0.0))

            thread = threading.Thread(target=scraper, daemon=True)
            called = time.time()
            thread.start()
            row = harness.produce_phase(broker, w, ["scrape-load"], 0, False)
            stop.set()
            thread.join()
            # The producers' window: from their start plus warm-up to the end of duration.
            start = called + harness.WORKER_START_DELAY_S + w.warmup_seconds
            end = called + harness.WORKER_START_DELAY_S + w.test_duration_seconds
            inside = [s for s in samples if start <= s[0] <= end]
            scraped = (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]) / (1 << 20)
            load_cpu_per_s = row["broker_cpu_s"] / row["wall_s"]
            before = harness.broker_cpu_s(broker)
            t = time.perf_counter()
            for _ in range(200):
                scrape.fetch(url)
            scrape_ms = (time.perf_counter() - t) / 200 * 1000
            per_scrape = (harness.broker_cpu_s(broker) - before) / 200
            size = len(scrape.fetch(url))
        finally:
            broker.stop()
    result = {
        "bench": "metrics_scrape",
        "bench_produce_mb_s": round(row["produce_mb_s"], 2),
        "scraped_bytes_in_mb_s": round(scraped, 2),
        "bytes_in_rate_vs_bench": round(scraped / row["produce_mb_s"], 3),
        "scrapes_in_window": len(inside),
        "samples_per_scrape": size,
        "scrape_wall_ms": round(scrape_ms, 2),
        "scrape_broker_cpu_ms": round(per_scrape * 1000, 3),
        "broker_cpu_s_per_s_under_load": round(load_cpu_per_s, 3),
        "scrape_cpu_fraction_at_1hz": round(per_scrape / load_cpu_per_s, 5),
        "note": "bytes in counts record batches as stored (headers included), the bench "
        "counts record values: batch overhead puts the scraped rate slightly above",
    }
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
