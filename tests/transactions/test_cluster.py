"""Transactions across a real 3-broker cluster: ``__transaction_state`` is a replicated
cluster topic, a transactional id's coordinator is the leader of its partition (Kafka's
``abs(transactionalId.hashCode) % transaction.state.log.num.partitions``), markers reach
partitions led by other brokers through WriteTxnMarkers, and a SIGKILLed coordinator's
transactions complete (or abort) cleanly under its successor -- with confluent-kafka
producers and read_committed consumers."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from kafkalite import _core
from kafkalite.cluster import Cluster
from kafkalite.errors import KafkaliteError
from tests.cluster.conftest import settled, wait_for
from tests.cluster.test_group_coordinator import java_partition
from tests.transactions.conftest import TXN_PARTITIONS
from tests.transactions.helpers import drain
from tests.transactions.test_java_and_kafka_python import _transactions

TXN_TOPIC = "__transaction_state"
# Data partitions led by brokers 1, 2 and 3, each replicated to all three.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
# One replica each: the coordinator hosts no log of the partitions other brokers lead, and
# their markers still reach them.
SINGLE_REPLICAS = [[1], [2], [3]]


def txn_coordinator(bootstrap: str, txn_id: str) -> int:
    """The coordinator one broker names for ``txn_id`` (FindCoordinator key type 1), once
    it names one (the first request creates the topic)."""

    def ask() -> int | None:
        with _core.KafkaClient(bootstrap, request_timeout_ms=5000) as client:
            try:
                return client.find_coordinator(txn_id, 1)[0]
            except KafkaliteError as e:
                assert e.error_code == _core.error_code("COORDINATOR_NOT_AVAILABLE"), e
                return None

    return wait_for(ask, timeout=40)


def create_spread(bootstrap: str, topic: str, assignment: list[list[int]] = ASSIGNMENT) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(30)


def producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 60000,
            "message.timeout.ms": 60000,
        }
    )
    p.init_transactions(60)
    return p


def test_coordinator_placement_and_markers_on_every_leader(cluster: Cluster) -> None:
    c = cluster
    bootstraps = [b.bootstrap_servers for b in c.brokers]
    txn_ids = [f"placed-{i}" for i in range(12)]
    named = {t: txn_coordinator(bootstraps[0], t) for t in txn_ids}
    meta = settled(bootstraps, TXN_TOPIC, TXN_PARTITIONS, timeout=40)
    for t in txn_ids:
        assert named[t] == meta[java_partition(t, TXN_PARTITIONS)].leader, t
        for b in bootstraps[1:]:
            assert txn_coordinator(b, t) == named[t], (t, b)
    # Replicated like __consumer_offsets: transaction.state.log.replication.factor (3).
    assert all(sorted(p.replicas) == [1, 2, 3] for p in meta.values())

    create_spread(c.bootstrap_servers, "spread", SINGLE_REPLICAS)
    settled(bootstraps, "spread", 3)
    p = producer(c.bootstrap_servers, "placed-0")
    p.begin_transaction()
    for i in range(9):
        p.produce("spread", value=b"c1-%d" % i, partition=i % 3)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(9):
        p.produce("spread", value=b"ab-%d" % i, partition=i % 3)
    p.flush(30)
    p.abort_transaction(60)
    p.begin_transaction()
    for i in range(3):
        p.produce("spread", value=b"c2-%d" % i, partition=i)
    p.commit_transaction(60)

    want = sorted([b"c1-%d" % i for i in range(9)] + [b"c2-%d" % i for i in range(3)])
    committed = sorted(m.value() for m in drain(c.bootstrap_servers, "spread", 3, "read_committed"))
    assert committed == want
    everything = drain(c.bootstrap_servers, "spread", 3, "read_uncommitted")
    assert sorted(m.value() for m in everything) == sorted(want + [b"ab-%d" % i for i in range(9)])

    # Every partition has its three markers, whichever broker leads it.
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "wm"})
    for partition in range(3):
        low, high = consumer.get_watermark_offsets(TopicPartition("spread", partition), 10)
        assert (low, high) == (0, 3 + 3 + 1 + 3), partition
    consumer.close()

    # The other brokers do not coordinate the id: NOT_COORDINATOR.
    wrong = next(b for b in c.brokers if b.broker_id != named["placed-0"])
    with _core.KafkaClient(wrong.bootstrap_servers) as client:
        with pytest.raises(KafkaliteError) as err:
            client.init_producer_id("placed-0", 60000)
        assert err.value.error_code == _core.error_code("NOT_COORDINATOR")


def test_coordinator_sigkill_mid_run_completes_or_aborts_cleanly(cluster: Cluster) -> None:
    c = cluster
    txn_id = "failover"
    coordinator = txn_coordinator(c.bootstrap_servers, txn_id)
    bootstraps = [b.bootstrap_servers for b in c.brokers]
    settled(bootstraps, TXN_TOPIC, TXN_PARTITIONS, timeout=40)
    create_spread(c.bootstrap_servers, "fo")
    settled(bootstraps, "fo", 3)
    survivors = ",".join(b.bootstrap_servers for b in c.brokers if b.broker_id != coordinator)
    p = producer(survivors, txn_id)

    committed: list[bytes] = []
    aborted: list[bytes] = []
    killed_at = 4
    for n in range(8):
        values = [b"t%d-%d" % (n, i) for i in range(6)]
        p.begin_transaction()
        for i, v in enumerate(values):
            p.produce("fo", value=v, partition=i % 3)
        p.flush(60)
        if n == killed_at:
            # The coordinator dies with the transaction open and its data written.
            c.brokers[coordinator - 1].kill()
        try:
            p.commit_transaction(90)
            committed += values
        except KafkaException as e:
            error = e.args[0]
            assert not error.fatal(), error
            if error.txn_requires_abort():
                p.abort_transaction(90)
                aborted += values
            else:
                # Retriable: the outcome is decided by the retry.
                p.commit_transaction(90)
                committed += values

    assert len(committed) >= 6 * 6, "at most the killed and one more transaction abort"
    new_coordinator = txn_coordinator(survivors.split(",")[0], txn_id)
    assert new_coordinator != coordinator
    got = [m.value() for m in drain(survivors, "fo", 3, "read_committed", settle_s=3.0)]
    # Exactly once: every committed record once, no aborted one, nothing else.
    assert sorted(got) == sorted(committed)
    assert not set(got) & set(aborted)

    # No stuck LSO: with every transaction decided, the last stable offset (what
    # ListOffsets answers read_committed) is the high watermark.
    def end_offsets(isolation: str) -> list[int]:
        consumer = Consumer(
            {"bootstrap.servers": survivors, "group.id": "lso", "isolation.level": isolation}
        )
        try:
            return [
                consumer.get_watermark_offsets(TopicPartition("fo", p), 10)[1] for p in range(3)
            ]
        finally:
            consumer.close()

    assert wait_for(lambda: end_offsets("read_committed") == end_offsets("read_uncommitted"))

    # The restarted broker rejoins; the id keeps working through its coordinator.
    c.brokers[coordinator - 1].restart()
    p.begin_transaction()
    p.produce("fo", value=b"after", partition=0)
    p.commit_transaction(90)
    got = [m.value() for m in drain(c.bootstrap_servers, "fo", 3, "read_committed", settle_s=3.0)]
    assert sorted(got) == sorted([*committed, b"after"])


def test_kafka_python_and_kafka_transactions_tool_on_a_cluster(cluster: Cluster) -> None:
    """kafka-python's transactional producer and Kafka's ``kafka-transactions`` (list,
    describe, describe-producers, abort) against three brokers, over partitions each led
    (and hosted) by one broker only."""
    c = cluster
    bs = c.bootstrap_servers
    bootstraps = [b.bootstrap_servers for b in c.brokers]
    coordinator = txn_coordinator(bootstraps[0], "kp-tx")
    settled(bootstraps, TXN_TOPIC, TXN_PARTITIONS, timeout=40)
    create_spread(bs, "kp", SINGLE_REPLICAS)
    settled(bootstraps, "kp", 3)

    p = KafkaProducer(bootstrap_servers=bs, transactional_id="kp-tx")
    p.init_transactions()
    p.begin_transaction()
    for i in range(6):
        p.send("kp", value=b"kept-%d" % i, partition=i % 3)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send("kp", value=b"dropped-%d" % i, partition=i)
    p.flush()
    p.abort_transaction()
    p.close()
    got = sorted(m.value() for m in drain(bs, "kp", 3, "read_committed", 1.0))
    assert got == [b"kept-%d" % i for i in range(6)]
    assert len(drain(bs, "kp", 3, "read_uncommitted", 1.0)) == 9

    # ListTransactions goes to every broker; only the coordinator knows the id.
    assert "kp-tx" in _transactions(bs, "list")
    described = _transactions(bs, "describe", "--transactional-id", "kp-tx")
    row = described.splitlines()[1].split()
    assert (int(row[0]), row[1], row[4]) == (coordinator, "kp-tx", "CompleteAbort"), described

    # An open transaction on a partition led by another broker than its coordinator:
    # describe-producers asks that leader, abort writes the marker there.
    stuck_coordinator = txn_coordinator(bootstraps[0], "stuck-tx")
    index = next(i for i, r in enumerate(SINGLE_REPLICAS) if r[0] != stuck_coordinator)
    stuck = Producer({"bootstrap.servers": bs, "transactional.id": "stuck-tx"})
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.produce("kp", value=b"hanging", partition=index)
    stuck.flush(30)
    producers = _transactions(bs, "describe-producers", "--topic", "kp", "--partition", str(index))
    rows = [line.split() for line in producers.splitlines()[1:] if line.strip()]
    start = next(r[-1] for r in rows if r[-1] not in ("None", "-1"))  # open txn start
    # After 2 kept records (0, 1), their marker (2), 1 aborted record (3), its marker (4).
    assert start == "5", producers
    _transactions(bs, "abort", "--topic", "kp", "--partition", str(index), "--start-offset", start)
    consumer = Consumer(
        {"bootstrap.servers": bs, "group.id": "s", "isolation.level": "read_committed"}
    )
    _, lso = consumer.get_watermark_offsets(TopicPartition("kp", index), timeout=10, cached=False)
    consumer.close()
    assert lso == 7  # past the hanging record and the tool's ABORT marker
    got = sorted(m.value() for m in drain(bs, "kp", 3, "read_committed", 1.0))
    assert got == [b"kept-%d" % i for i in range(6)]
