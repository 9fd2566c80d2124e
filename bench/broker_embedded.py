"""Embedded broker figures: start-to-ready time, idle RSS, and produce/consume throughput
with confluent-kafka (librdkafka) for 1 KiB records. Not a test; the last line is JSON.

- Start-to-ready: from `Broker()` construction on a fresh data dir until a real client's
  Metadata request is answered (a new confluent-kafka AdminClient's list_topics), median of
  --runs. librdkafka itself sometimes holds its first connection back ~50 ms ("still
  suppressed ... application metadata request" in its debug log), so the same is also
  measured with kafkalite's own Rust client (`_core.KafkaClient`, which opens its connection
  with an ApiVersions round trip before the Metadata request), and construction until
  `start()` returns (listeners bound and serving).
- Idle RSS: a fresh `python -c` process that imports kafkalite and runs one started broker
  with nothing connected, read from /proc/<pid>/status after --idle-seconds; reported as
  that process's whole RSS and as the part the broker adds to the same process before it
  starts (the interpreter and imports are not the broker's).
- Throughput: one producer (acks=1, linger.ms=5, batch.size=1 MiB, no compression) sends
  --records records of --record-bytes to one partition and flushes; then one assign()ed
  consumer (no group, fetch.max.bytes 64 MiB) reads them all from offset 0. Each is timed
  end to end; median of --repeat runs, each on a new broker and data dir.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

MIB = 1 << 20
DEADLINE_S = 300  # any single phase taking longer than this is a failure, not a figure

IDLE_PROBE = """
import sys, tempfile, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
import kafkalite
from kafkalite import Broker
before = rss()
with tempfile.TemporaryDirectory() as tmp, Broker(log_dirs=tmp):
    time.sleep(float(sys.argv[1]))
    print(before, rss())
"""


def idle_rss_mib(idle_s: float) -> tuple[float, float]:
    """(whole-process RSS, RSS the broker adds) of a fresh process running one broker."""
    out = subprocess.run(
        [sys.executable, "-c", IDLE_PROBE, str(idle_s)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    before, after = float(out[0]), float(out[1])
    return after, after - before


def client_metadata(bootstrap_servers: str) -> None:
    """One Metadata request (no topics) by kafkalite's Rust client on a new connection;
    returns when it is answered. The time includes the client's ApiVersions round trip,
    which opens every connection."""
    from kafkalite import _core

    with _core.KafkaClient(bootstrap_servers, client_id="bench", request_timeout_ms=10_000) as c:
        assert c.metadata([]).brokers, "no broker in Metadata"


def ready_ms(runs: int) -> list[tuple[float, float, float]]:
    """(start() returned, Rust client's Metadata answered, librdkafka's answered) in ms
    after construction, each on a fresh broker and data dir."""
    from confluent_kafka.admin import AdminClient

    from kafkalite import Broker

    times = []
    for i in range(2 * runs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            broker = Broker(log_dirs=tmp).start()
            listening = time.perf_counter()
            try:
                if i % 2 == 0:
                    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
                    assert admin.list_topics(timeout=10).brokers, "no broker in Metadata"
                    client = time.perf_counter()
                    times.append(
                        ((listening - started) * 1000, math.nan, (client - started) * 1000)
                    )
                else:
                    client_metadata(broker.bootstrap_servers)
                    ours = time.perf_counter()
                    times.append(((listening - started) * 1000, (ours - started) * 1000, math.nan))
            finally:
                broker.stop()
    return times


def throughput(records: int, size: int) -> dict[str, float]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkalite import Broker

    value = b"x" * size
    errors: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp, Broker(log_dirs=tmp) as broker:
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "acks": "1",
                "linger.ms": 5,
                "batch.size": MIB,
                "compression.type": "none",
                "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1 << 20,
            }
        )

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        started = time.perf_counter()
        for _ in range(records):
            while True:
                try:
                    producer.produce("bench", value, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.001)
        if producer.flush(DEADLINE_S) or errors:
            raise RuntimeError(f"produce failed: {errors[:3]}")
        produce_s = time.perf_counter() - started

        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "bench-unused",
                "enable.auto.commit": False,
                "fetch.max.bytes": 64 * MIB,
                "max.partition.fetch.bytes": 16 * MIB,
                "fetch.wait.max.ms": 100,
            }
        )
        consumer.assign([TopicPartition("bench", 0, 0)])
        seen = 0
        started = time.perf_counter()
        try:
            while seen < records:
                if time.perf_counter() - started > DEADLINE_S:
                    raise RuntimeError(f"consumed only {seen} of {records} records")
                for m in consumer.consume(10_000, timeout=1):
                    if m.error():
                        raise RuntimeError(str(m.error()))
                    seen += 1
            consume_s = time.perf_counter() - started
        finally:
            consumer.close()
    mib = records * size / MIB
    return {
        "produce_mib_per_s": mib / produce_s,
        "produce_records_per_s": records / produce_s,
        "consume_mib_per_s": mib / consume_s,
        "consume_records_per_s": records / consume_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="start-to-ready samples")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs (median)")
    parser.add_argument("--idle-seconds", type=float, default=2.0)
    args = parser.parse_args()

    rss_total, rss_broker = idle_rss_mib(args.idle_seconds)
    times = ready_ms(args.runs)
    listening_ms = statistics.median(t[0] for t in times)
    ours_ready = statistics.median(t[1] for t in times if not math.isnan(t[1]))
    ready = statistics.median(t[2] for t in times if not math.isnan(t[2]))
    runs = [throughput(args.records, args.record_bytes) for _ in range(args.repeat)]
    figures = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(
        f"start-to-ready {ready:.1f} ms with confluent-kafka, {ours_ready:.1f} ms with "
        f"kafkalite's Rust client (start() returned after {listening_ms:.1f} ms; medians of "
        f"{args.runs}); "
        f"idle RSS {rss_total:.1f} MiB for the whole process, "
        f"{rss_broker:.1f} MiB of it the broker's; {args.records} records of "
        f"{args.record_bytes} B: produce {figures['produce_records_per_s']:.0f} records/sec "
        f"({figures['produce_mib_per_s']:.1f} MiB/sec), consume "
        f"{figures['consume_records_per_s']:.0f} records/sec "
        f"({figures['consume_mib_per_s']:.1f} MiB/sec), median of {args.repeat}",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "start_to_ready_ms_median": round(ready, 2),
                "start_to_rust_client_metadata_ms_median": round(ours_ready, 2),
                "start_to_listening_ms_median": round(listening_ms, 2),
                "start_runs": args.runs,
                "idle_rss_process_mib": round(rss_total, 1),
                "idle_rss_broker_mib": round(rss_broker, 1),
                **{key: round(value, 1) for key, value in figures.items()},
                "records": args.records,
                "record_bytes": args.record_bytes,
                "throughput_runs": args.repeat,
            }
        )
    )


if __name__ == "__main__":
    main()
