"""The single-node fault checker, short: a broker daemon SIGKILLed (also mid roll,
compaction and retention), paused, its segment tails torn, closed segments corrupted and
index files deleted or made stale, under numbered idempotent acks=all writes and a
committing consumer group; nothing acknowledged may be lost, duplicated, reordered or
made up, and no committed offset may move backwards. The long run is bench/faults.py."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.chaos.checker import Writers
from kafkalite.chaos.node import Node
from kafkalite.chaos.offsets import GroupOffsets
from kafkalite.chaos.single_run import judge, run_fault

# A corrupt batch comes last: a crash after one drops everything after it (recovery's rule,
# as in Kafka; bench/results/faults-single-node counts it as "corrupt-closed+sigkill").
MIXED = ["sigkill", "torn-tail", "sigstop", "sigkill-segment-op", "missing-index"]
MIXED += ["sigkill-segment-op", "stale-index", "sigkill-segment-op", "corrupt-closed"]


def assert_clean(row: dict[str, object]) -> None:
    bad = {k: row[k] for k in ("lost", "duplicated", "reordered", "phantom") if row[k]}
    bad.update({k: row[k] for k in ("offsets_backwards", "commits_lost") if row[k]})
    assert not bad, (bad, row["lost_examples"], row["offsets_examples"], row["fault_log"])


def test_judge_excuses_only_what_the_log_removed_on_purpose() -> None:
    class Fake(Writers):
        def __init__(self) -> None:
            super().__init__("unused:1", "t", writers=1)
            tally = self._tallies["w0"]
            tally.sent = 6
            for seq in range(5):
                tally.acked.add(("w0", seq))
                tally.offsets[("w0", seq)] = (0, seq)

    w = Fake()
    # Read back: 3 and 4, and a phantom 9 (never sent).
    records = [(0, 3, "w0", 3), (0, 4, "w0", 4), (0, 5, "w0", 9)]
    plain = judge(w, records)
    assert (plain.lost, plain.phantom, plain.unacked_present) == (3, 1, 0)
    assert judge(w, records, compacted=True).compacted == 3  # later values of the key
    kept = judge(w, records, log_start={0: 2})
    assert (kept.retention, kept.lost) == (2, 1)
    cut = judge(w, records, destroyed={("w0", 2)})
    assert (cut.destroyed, cut.lost) == (1, 2)


def test_mixed_faults_lose_nothing_acknowledged(tmp_path: Path) -> None:
    row = run_fault(MIXED, len(MIXED), tmp_path, rate=100, seed=17, settle_s=0.5)
    assert row["injected"] == len(MIXED)
    assert row["acked"] > 1000, row
    assert row["commits_acked"] > 0 and row["offset_samples"] > 10, row
    assert_clean(row)
    # The corrupt batches are refused on reading, never delivered as data.
    assert row["read_errors"] >= 1 and row["destroyed"] >= 1, row
    # One kill each in a compaction, a roll and a deletion (not timed out waiting).
    assert row["killed_on"] == {"compaction": 1, "roll": 1, "deletion": 1}, row["killed_on"]


def test_a_committed_offset_moving_backwards_is_caught(tmp_path: Path) -> None:
    with Node(tmp_path) as node:
        bs = node.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
        w = Writers(bs, "t", writers=1, rate=300).start()
        w.wait_acked(200)
        w.stop()
        watch = GroupOffsets(bs, "t", group="g", member=False).start()
        c = Consumer({"bootstrap.servers": bs, "group.id": "g"})
        for offset in (100, 150, 1):  # the last one moves backwards
            c.commit(offsets=[TopicPartition("t", 0, offset)], asynchronous=False)
            seen = watch.result.samples
            deadline = time.monotonic() + 10
            while watch.result.samples < seen + 3:
                assert time.monotonic() < deadline, "OffsetFetch not sampled"
                time.sleep(0.05)
        c.close()
        result = watch.stop()
    assert result.backwards >= 1, result
    assert not result.ok
