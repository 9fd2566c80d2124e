"""The durability checker: numbered writes in, everything read back, losses counted.

Writers send records keyed by writer id whose value is that writer's next sequence number,
with acks=all and idempotence, and record every delivery report. After the faults the
whole topic is read from the beginning to its end and compared with what was
acknowledged:

- lost: acknowledged but absent -- must be zero for a durable log;
- duplicated: extra copies of one (writer, sequence) -- must be zero with idempotence;
- reordered: a writer's record after one with a higher sequence in the same partition;
- unacknowledged but present: allowed (the ack was lost, not the write).

The counting (``analyse``) is a pure function, so its rules can be checked on their own.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

# A record as read back: (partition, offset, writer key, sequence).
Read = tuple[int, int, str, int]


@dataclass
class CheckResult:
    """What one checked run saw. ``ok`` is the verdict on the log, not on the clients."""

    sent: int = 0
    acked: int = 0
    failed: int = 0  # a delivery report with an error (the write may still be there)
    read: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    unacked_present: int = 0
    phantom: int = 0  # read back but never sent (counted by ``check``)
    faults: int = 0
    producers_replaced: int = 0  # after fatal producer errors
    fault_log: list[str] = field(default_factory=list)
    lost_examples: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.reordered == 0 and not self.phantom

    def summary(self) -> str:
        verdict = "OK" if self.ok else "FAILED"
        line = (
            f"{verdict}: {self.faults} faults; {self.sent} sent, {self.acked} acknowledged, "
            f"{self.failed} failed, {self.read} read back; lost {self.lost}, duplicated "
            f"{self.duplicated}, reordered {self.reordered}, unacknowledged but present "
            f"{self.unacked_present} (allowed)"
        )
        if self.phantom:
            line += f"; {self.phantom} phantoms (read back, never sent)"
        if self.producers_replaced:
            line += f"; {self.producers_replaced} producers replaced after fatal errors"
        if self.lost_examples:
            line += f"; lost e.g. {self.lost_examples}"
        return line

    def as_dict(self) -> dict[str, Any]:
        keys = ("sent", "acked", "failed", "read", "lost", "duplicated", "reordered")
        return {k: getattr(self, k) for k in (*keys, "unacked_present", "phantom", "faults")}


def analyse(
    acked: Iterable[tuple[str, int]], records: Iterable[Read], sent: int = 0, failed: int = 0
) -> CheckResult:
    """Compare the acknowledged (writer, sequence) pairs with the records read back."""
    acked_set = set(acked)
    ordered = sorted(records)  # log order: by partition, then offset
    copies = Counter((w, s) for _p, _o, w, s in ordered)
    present = set(copies)
    # Reordering is judged on first copies only: a re-sent duplicate is counted once, as a
    # duplicate, not again as out of order.
    reordered = 0
    highest: dict[tuple[int, str], int] = {}
    seen: set[tuple[str, int]] = set()
    for p, _o, w, s in ordered:
        if (w, s) in seen:
            continue
        seen.add((w, s))
        top = highest.get((p, w), -1)
        if s < top:
            reordered += 1
        else:
            highest[(p, w)] = s
    missing = sorted(acked_set - present)
    return CheckResult(
        sent=sent,
        acked=len(acked_set),
        failed=failed,
        read=len(ordered),
        lost=len(missing),
        duplicated=sum(c - 1 for c in copies.values()),
        reordered=reordered,
        unacked_present=len(present - acked_set),
        lost_examples=missing[:5],
    )


def offset_anomalies(
    acked_offsets: Mapping[tuple[str, int], tuple[int, int | None]], records: Iterable[Read]
) -> dict[str, int]:
    """What the acknowledged offsets say against the log read back.

    - backwards: in one partition, a writer's acknowledged record at a lower offset than
      one it sent (and had acknowledged) before -- an offset handed out twice or a log
      that went back;
    - rewritten: the acknowledged offset holds another record, or none (a lost record is
      counted here too, where it was);
    - without_offset: delivery reports that gave no offset (librdkafka's -1 for a
      duplicate the broker recognised by its sequence), left out of both counts.
    """
    known: dict[tuple[str, int], tuple[int, int]] = {
        k: (p, o) for k, (p, o) in acked_offsets.items() if o is not None and o >= 0
    }
    by_part: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for (writer, seq), (partition, offset) in known.items():
        by_part.setdefault((writer, partition), []).append((seq, offset))
    backwards = 0
    for pairs in by_part.values():
        top = -1
        for _seq, offset in sorted(pairs):
            if offset < top:
                backwards += 1
            top = max(top, offset)
    stored = {(p, o): (w, s) for p, o, w, s in records}
    rewritten = sum(1 for ws, po in known.items() if stored.get(po) != ws)
    return {
        "backwards": backwards,
        "rewritten": rewritten,
        "without_offset": len(acked_offsets) - len(known),
    }


@dataclass
class _Tally:
    """One writer's counts, touched only by its own thread (delivery reports run in the
    thread that polls the producer), so no lock is needed."""

    acked: set[tuple[str, int]] = field(default_factory=set)
    # Where each acknowledged write went: (partition, offset), for faults that destroy a
    # known range of the log (a torn tail) or logs that delete on purpose (retention).
    offsets: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    sent: int = 0
    failed: int = 0
    fatal: int = 0
    errors: Counter[str] = field(default_factory=Counter)


class Writers:
    """Background writer threads, one confluent-kafka producer each, pacing themselves to
    ``rate`` records per second. ``stop()`` waits for the outstanding delivery reports."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        writers: int = 2,
        rate: float = 100.0,
        config: Mapping[str, object] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.rate = rate
        self.config: dict[str, object] = {
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            # Long enough to ride out a leader change; a write still unreported at the end
            # simply counts as unacknowledged.
            "message.timeout.ms": 20000,
            "request.timeout.ms": 5000,
            "retry.backoff.ms": 100,
            **(config or {}),
        }
        self._tallies = {f"w{i}": _Tally() for i in range(writers)}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def acked(self) -> set[tuple[str, int]]:
        return set().union(*(list(t.acked) for t in self._tallies.values()))

    @property
    def acked_offsets(self) -> dict[tuple[str, int], tuple[int, int]]:
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for t in self._tallies.values():
            out.update(t.offsets)
        return out

    @property
    def sent_by_writer(self) -> dict[str, int]:
        """Writes sent per writer: its sequences are 0 up to this, so anything read back
        beyond it was never sent (a phantom)."""
        return {name: t.sent for name, t in self._tallies.items()}

    @property
    def acked_count(self) -> int:
        return sum(len(t.acked) for t in self._tallies.values())

    @property
    def sent(self) -> int:
        return sum(t.sent for t in self._tallies.values())

    @property
    def failed(self) -> int:
        return sum(t.failed for t in self._tallies.values())

    @property
    def fatal(self) -> int:
        """Producers replaced after a fatal error, over all writers."""
        return sum(t.fatal for t in self._tallies.values())

    @property
    def errors(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for t in self._tallies.values():
            out.update(dict(t.errors))
        return out

    def start(self) -> Writers:
        for name, tally in self._tallies.items():
            t = threading.Thread(target=self._run, args=(name, tally), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def wait_acked(self, n: int, timeout: float = 60.0) -> None:
        """Until ``n`` writes are acknowledged (the run is under way)."""
        deadline = time.monotonic() + timeout
        while self.acked_count < n:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"only {self.acked_count} of {n} writes acknowledged after {timeout:g} s; "
                    f"errors: {dict(self.errors)}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()

    @staticmethod
    def _report(tally: _Tally, writer: str, seq: int):
        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                tally.acked.add((writer, seq))
                tally.offsets[(writer, seq)] = (msg.partition(), msg.offset())
            else:
                tally.failed += 1
                tally.errors[err.name()] += 1

        return on_delivery

    def _producer(self) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, **self.config})

    def _run(self, writer: str, tally: _Tally) -> None:
        seq = 0
        producer = self._producer()
        interval = 1.0 / self.rate if self.rate else 0.0
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                producer.produce(
                    self.topic,
                    key=writer.encode(),
                    value=str(seq).encode(),
                    on_delivery=self._report(tally, writer, seq),
                )
                tally.sent += 1
                seq += 1
                producer.poll(0)
            except BufferError:
                _drain(producer, 0.1)
                continue
            except (KafkaException, SystemError) as e:
                # SystemError: confluent-kafka ran a delivery report while its fatal error
                # was pending; the producer is as dead as after a fatal KafkaException.
                err = e.args[0] if isinstance(e, KafkaException) else None
                tally.errors[err.name() if err is not None else "_FATAL"] += 1
                # librdkafka may raise its _FATAL code itself with fatal() false: the
                # producer is dead all the same.
                if err is not None and not err.fatal() and err.code() != KafkaError._FATAL:
                    self._stop.wait(0.1)
                    continue
                # An idempotent producer that hit a fatal error (e.g. its sequence state is
                # gone) cannot go on; a new one carries on with the next numbers.
                _drain(producer, 1)  # its queued writes fail: their reports come now
                tally.fatal += 1
                self._stop.wait(1.0)
                producer = self._producer()
                continue
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                self._stop.wait(pause)
            else:
                next_at = time.monotonic()
        _drain(producer, float(self.config["message.timeout.ms"]) / 1000 + 5)  # type: ignore[arg-type]


def _drain(producer: Producer, timeout: float) -> None:
    """Deliver the outstanding reports; a producer in a fatal state raises instead, and
    its remaining writes simply stay unacknowledged."""
    try:
        producer.flush(timeout)
    except (KafkaException, SystemError):  # SystemError: see Writers._run
        pass


def read_all(
    bootstrap: str,
    topic: str,
    timeout: float = 60.0,
    damaged: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    errors: list[tuple[int, int, str]] | None = None,
) -> list[Read]:
    """Every record of ``topic`` from the beginning to the end (each partition's high
    watermark when the read starts), retried while the cluster settles.

    CRCs are checked. ``damaged`` are offset ranges (first, last) per partition that a fault
    corrupted on purpose: a read error inside one moves past it; every read error is
    appended to ``errors`` as (partition, offset, error name)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafkalite-checker-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "check.crcs": True,
        }
    )
    try:
        deadline = time.monotonic() + timeout
        md = consumer.list_topics(topic, timeout=10).topics[topic]
        parts = sorted(md.partitions)
        ends: dict[int, int] = {}
        for p in parts:
            while True:
                try:
                    ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), 5)[1]
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        out: list[Read] = []
        pos = {p: 0 for p in parts}
        while any(pos[p] < ends[p] for p in parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(out)} records; positions {pos}, ends {ends}")
            m = consumer.poll(0.5)
            if m is None:
                continue
            p = m.partition()
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    # The log may now end short of the end seen at first (a wiped
                    # replica): the current end, asked again, decides.
                    now = _high_watermark(consumer, topic, p)
                    if now is not None and m.offset() >= now:
                        pos[p] = max(pos[p], ends[p])
                    continue
                if errors is not None:
                    errors.append((p, m.offset(), m.error().name()))
                past = _past_damage(damaged, p, m.offset())
                if past is not None:
                    pos[p] = max(pos[p], past)
                    consumer.seek(TopicPartition(topic, p, past))
                continue  # else a transient error while a leader moves
            o = m.offset()
            pos[p] = max(pos[p], o + 1)
            key = (m.key() or b"").decode(errors="replace")
            try:
                seq = int(m.value() or b"")
            except ValueError:
                continue  # not a checker record
            out.append((p, o, key, seq))
        return out
    finally:
        consumer.close()


def _past_damage(
    damaged: Mapping[int, Sequence[tuple[int, int]]] | None, partition: int, offset: int
) -> int | None:
    for first, last in (damaged or {}).get(partition, ()):
        if first <= offset <= last:
            return last + 1
    return None


def _high_watermark(consumer: Consumer, topic: str, partition: int) -> int | None:
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), 5)[1])
    except KafkaException:
        return None


def check(writers: Writers, bootstrap: str, topic: str, timeout: float = 60.0) -> CheckResult:
    """After ``writers.stop()``: read the topic back and count."""
    records = read_all(bootstrap, topic, timeout)
    result = analyse(writers.acked, records, writers.sent, writers.failed)
    result.producers_replaced = writers.fatal
    sent = writers.sent_by_writer
    result.phantom = sum(1 for _p, _o, w, seq in records if seq >= sent.get(w, 0))
    result.unacked_present -= result.phantom
    return result
