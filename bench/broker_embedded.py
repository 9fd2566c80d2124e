"""Embedded broker figures: start-to-ready time, idle RSS, and produce/consume MB/s with
confluent-kafka (librdkafka) for 1 KiB records. Not a test; the last line is JSON.

Start-to-ready is measured from `Broker()` construction to the first successful metadata
answer to a real client on a fresh data dir. Idle RSS is the whole process's RSS with one
started broker and nothing connected, minus the same process's RSS before the broker
(the Python interpreter and imports are not the broker's). Throughput: one producer
(linger 5 ms, batch.size 1 MiB, acks=1, no compression) then one assign()ed consumer
reading the same records from offset 0, each timed end to end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time

MIB = 1 << 20


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def ready_ms(runs: int) -> list[float]:
    from confluent_kafka.admin import AdminClient

    from kafkalite import Broker

    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            broker = Broker(log_dirs=tmp).start()
            ready = time.perf_counter()
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.list_topics(timeout=10)
            answered = time.perf_counter()
            broker.stop()
            times.append(((ready - started) * 1000, (answered - started) * 1000))
    return times  # type: ignore[return-value]


def throughput(records: int, size: int) -> dict[str, float]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafkalite import Broker

    value = b"x" * size
    with tempfile.TemporaryDirectory() as tmp, Broker(log_dirs=tmp) as broker:
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "linger.ms": 5,
                "batch.size": MIB,
                "acks": "1",
                "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1 << 20,
            }
        )
        started = time.perf_counter()
        for _ in range(records):
            while True:
                try:
                    producer.produce("bench", value)
                    break
                except BufferError:
                    producer.poll(0.001)
        producer.flush(60)
        produce_s = time.perf_counter() - started
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "bench",
                "enable.auto.commit": False,
                "fetch.max.bytes": 64 * MIB,
                "max.partition.fetch.bytes": 16 * MIB,
            }
        )
        consumer.assign([TopicPartition("bench", 0, 0)])
        seen = 0
        started = time.perf_counter()
        while seen < records:
            seen += sum(1 for m in consumer.consume(10_000, timeout=1) if not m.error())
        consume_s = time.perf_counter() - started
        consumer.close()
    mb = records * size / MIB
    return {"produce_mb_s": mb / produce_s, "consume_mb_s": mb / consume_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs (median)")
    args = parser.parse_args()

    import confluent_kafka  # noqa: F401  (imports are not the broker's memory)

    import kafkalite  # noqa: F401

    base_rss = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        from kafkalite import Broker

        broker = Broker(log_dirs=tmp).start()
        time.sleep(1.0)
        idle_rss = rss_mib() - base_rss
        broker.stop()
    times = ready_ms(args.runs)
    start_ms = statistics.median(t[0] for t in times)
    answer_ms = statistics.median(t[1] for t in times)
    runs = [throughput(args.records, args.record_bytes) for _ in range(args.repeat)]
    produce = statistics.median(r["produce_mb_s"] for r in runs)
    consume = statistics.median(r["consume_mb_s"] for r in runs)
    print(
        f"start-to-listening {start_ms:.1f} ms, start-to-first-metadata-answer {answer_ms:.1f} ms "
        f"(median of {args.runs}); idle RSS {idle_rss:.1f} MiB; "
        f"produce {produce:.0f} MiB/s, consume {consume:.0f} MiB/s "
        f"({args.records} x {args.record_bytes} B, median of {args.repeat})",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "start_to_listening_ms": round(start_ms, 2),
                "start_to_first_answer_ms": round(answer_ms, 2),
                "idle_rss_mib": round(idle_rss, 1),
                "produce_mb_s": round(produce, 1),
                "consume_mb_s": round(consume, 1),
                "records": args.records,
                "record_bytes": args.record_bytes,
            }
        )
    )


if __name__ == "__main__":
    main()
