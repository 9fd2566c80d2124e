"""One client process of a run: a confluent-kafka (librdkafka) producer or consumer.

The harness starts several of these (``python -m kafkalite.bench.worker JSON``) so one
Python interpreter is never the bottleneck; each prints one JSON object as its last line:
counts, the bytes acknowledged or read inside the measurement window, a per-second
timeline, a latency histogram and its own CPU time (to show how busy the client was).

Clocks: wall time (time.time) throughout, because end-to-end latency compares the
consumer's clock with the record timestamp the producer set, across processes.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

from kafkalite.bench.histogram import Histogram

MIB = 1 << 20
FLUSH_TIMEOUT_S = 60
CONSUME_GRACE_S = 5  # tailing consumers keep reading this long after producers stop
CATCHUP_SAMPLE = 1_000_000  # 'sample' at or above this: no latency recorded at all


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _wait_until(t: float) -> float:
    """Sleep until wall time t; returns how late we are (>= 0)."""
    delay = t - time.time()
    if delay > 0:
        time.sleep(delay)
    return max(0.0, time.time() - t)


def producer_config(cfg: dict[str, Any]) -> dict[str, Any]:
    return {
        "bootstrap.servers": cfg["bootstrap"],
        "acks": cfg["acks"],
        "compression.type": cfg["compression"],
        "linger.ms": cfg.get("linger_ms", 5),
        "batch.size": cfg.get("batch_size", MIB),
        # 32 MiB of queued records, as the Java producer's buffer.memory: a deeper client
        # queue would turn publish latency into queueing time inside the client.
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 32 * 1024,
        # Same client settings against every system; idempotence off because acks=1 runs
        # cannot use it and it should not differ between workloads.
        "enable.idempotence": False,
    }


def run_producer(cfg: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Producer

    size = int(cfg["message_size"])
    rate = float(cfg["rate"])  # messages/s for this process; 0 = max
    duration = float(cfg["duration"])
    warmup = float(cfg["warmup"])
    keyed = bool(cfg["keyed"])
    topic = cfg["topic"]
    producer = Producer(producer_config(cfg))
    value = os.urandom(size)  # incompressible: compression must not flatter anyone
    keys = [f"key-{i}".encode() for i in range(1000)] if keyed else None
    hist = Histogram()
    timeline: list[int] = []
    state = {"acked": 0, "errors": 0, "win_bytes": 0, "first_error": ""}
    late_s = _wait_until(float(cfg["start_at"]))
    t0 = time.time()
    warm_end, end = t0 + warmup, t0 + duration

    def account(now: float, latency_s: float) -> None:
        state["acked"] += 1
        sec = int(now - t0)
        while len(timeline) <= sec:
            timeline.append(0)
        timeline[sec] += size
        if warm_end <= now < end:
            state["win_bytes"] += size
            hist.record(latency_s * 1e6)

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or str(err)
            return
        account(time.time(), msg.latency())

    sent = 0
    cpu0 = _cpu_s()
    if rate <= 0:
        # Max rate: keep librdkafka's queue full; latency is send() -> ack, as Kafka's
        # ProducerPerformance measures it.
        now = t0
        limit = int(cfg.get("max_messages") or 0) or 1 << 62
        while now < end and sent < limit:
            for _ in range(min(500, limit - sent)):
                key = keys[sent % 1000] if keys else None
                try:
                    producer.produce(topic, value, key, on_delivery=on_delivery)
                    sent += 1
                except BufferError:
                    producer.poll(0.001)
            producer.poll(0)
            now = time.time()
    else:
        # Fixed rate, measured from the intended send time (no coordinated omission): a
        # stall delays the sends behind it, and their wait counts as latency.
        interval = 1.0 / rate

        def fixed(intended: float):
            def cb(err: Any, _msg: Any) -> None:
                if err is not None:
                    state["errors"] += 1
                    state["first_error"] = state["first_error"] or str(err)
                    return
                now = time.time()
                account(now, now - intended)

            return cb

        max_messages = int(rate * duration) + 1
        while sent < max_messages:
            now = time.time()
            if now >= end:
                break
            due = min(max_messages, int((now - t0) * rate) + 1)
            while sent < due:
                intended = t0 + sent * interval
                key = keys[sent % 1000] if keys else None
                try:
                    producer.produce(
                        topic,
                        value,
                        key,
                        on_delivery=fixed(intended),
                        timestamp=int(intended * 1000),
                    )
                    sent += 1
                except BufferError:
                    producer.poll(0.001)
            producer.poll(0)
            wait = t0 + sent * interval - time.time()
            if wait > 0:
                time.sleep(min(wait, 0.001))
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    return {
        "role": "producer",
        "sent": sent,
        "acked": state["acked"],
        "errors": state["errors"] + remaining,
        "first_error": state["first_error"],
        "window_bytes": state["win_bytes"],
        "window_s": duration - warmup,
        "timeline_bytes_per_s": timeline,
        "latency": hist.to_json(),
        "cpu_s": _cpu_s() - cpu0,
        "wall_s": time.time() - t0,
        "late_start_s": late_s,
    }


def consumer_config(cfg: dict[str, Any]) -> dict[str, Any]:
    return {
        "bootstrap.servers": cfg["bootstrap"],
        "group.id": "kafkalite-bench-unused",  # assign()ed, never joins: no rebalances
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.max.bytes": 64 * MIB,
        "max.partition.fetch.bytes": 16 * MIB,
        "fetch.wait.max.ms": 100,
        "fetch.min.bytes": 1,
        "queued.max.messages.kbytes": 256 * 1024,
    }


def run_consumer(cfg: dict[str, Any]) -> dict[str, Any]:
    """Tail mode (``target`` absent): read from offset 0 while producers run, record
    end-to-end latency (now - record timestamp) inside the window. Catch-up mode: read
    ``target`` messages from offset 0 as fast as possible and time it."""
    from confluent_kafka import Consumer, TopicPartition

    size = int(cfg["message_size"])
    consumer = Consumer(consumer_config(cfg))
    target = cfg.get("target")
    sample = max(1, int(cfg.get("sample", 1)))
    hist = Histogram()
    timeline: list[int] = []
    late_s = _wait_until(float(cfg["start_at"]))
    # assign() only now: librdkafka starts fetching at assign(), and a read that began
    # before t0 would flatter the catch-up figure.
    consumer.assign([TopicPartition(cfg["topic"], p, 0) for p in cfg["partitions"]])
    t0 = time.time()
    warm_end = t0 + float(cfg.get("warmup", 0))
    end = t0 + float(cfg["duration"])
    stop_at = end + CONSUME_GRACE_S if target is None else t0 + float(cfg["duration"])
    seen = win_bytes = errors = 0
    first_error = ""
    cpu0 = _cpu_s()
    last = t0
    while True:
        now = time.time()
        if now >= stop_at or (target is not None and seen >= target):
            break
        msgs = consumer.consume(10_000, timeout=0.1)
        if not msgs:
            continue
        now = time.time()
        last = now
        # Comprehensions, not a Python for-loop body per record: the consumer must not be
        # what limits a catch-up read.
        failed = [m for m in msgs if m.error() is not None]
        bad = len(failed)
        if failed:
            first_error = first_error or str(failed[0].error())
        if sample < CATCHUP_SAMPLE:
            now_us = now * 1e6
            for m in msgs[::sample]:
                if m.error() is None:
                    ts = m.timestamp()[1]
                    if warm_end <= ts / 1000 < end:
                        hist.record(max(0.0, now_us - ts * 1000))
        errors += bad
        n = len(msgs) - bad
        seen += n
        sec = int(now - t0)
        while len(timeline) <= sec:
            timeline.append(0)
        timeline[sec] += n * size
        if warm_end <= now < end:
            win_bytes += n * size
    consumer.close()
    return {
        "role": "consumer",
        "consumed": seen,
        "errors": errors,
        "first_error": first_error,
        "window_bytes": win_bytes,
        "elapsed_s": last - t0,  # catch-up: first poll to the last batch read
        "timeline_bytes_per_s": timeline,
        "latency": hist.to_json(),
        "cpu_s": _cpu_s() - cpu0,
        "wall_s": time.time() - t0,
        "late_start_s": late_s,
    }


def main() -> int:
    cfg = json.loads(sys.argv[1])
    result = run_producer(cfg) if cfg["role"] == "producer" else run_consumer(cfg)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
