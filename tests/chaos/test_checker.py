"""The checker checked: it must see a clean run as clean, and must see planted losses,
duplicates and reorderings. Real brokers, real clients."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalite.chaos.checker import Writers, analyse, check, offset_anomalies
from kafkalite.cluster import Cluster
from tests.chaos.conftest import OVERRIDES, create_topic


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data: Path = tmp_path_factory.mktemp("checker-cluster")
    with Cluster(brokers=3, overrides=OVERRIDES, data_dir=data) as c:
        yield c


def written(cluster: Cluster, topic: str, seconds: float = 2.0) -> Writers:
    # One writer: two idempotent producers may be given the same producer id by two
    # brokers today (see test_faults), which is not what these tests are about.
    w = Writers(cluster.bootstrap_servers, topic, writers=1, rate=300).start()
    try:
        w.wait_acked(50)
        time.sleep(seconds)
    finally:
        w.stop()
    return w


def test_analyse_counts_each_kind_once() -> None:
    acked = [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    # a1 lost, a0 twice, a3 (never acked) present, b's 0 after b's 5 (reordered).
    records = [(0, 0, "a", 0), (0, 1, "a", 2), (0, 2, "a", 0), (0, 3, "a", 3)]
    records += [(1, 0, "b", 5), (1, 1, "b", 0)]
    r = analyse(acked, records)
    assert (r.lost, r.duplicated, r.reordered, r.unacked_present) == (1, 1, 1, 2)
    assert r.lost_examples == [("a", 1)]
    assert not r.ok and "lost 1" in r.summary()


def test_offset_anomalies_counts_backwards_rewritten_and_unknown() -> None:
    acked: dict[tuple[str, int], tuple[int, int | None]] = {
        ("a", 0): (0, 5),
        ("a", 1): (0, 3),  # acknowledged below a0's offset: backwards
        ("a", 2): (0, 7),  # the log holds b's record there: rewritten
        ("a", 3): (0, None),  # no offset in the report
        ("b", 0): (1, 0),
    }
    records = [(0, 5, "a", 0), (0, 3, "a", 1), (0, 7, "b", 9), (1, 0, "b", 0)]
    got = offset_anomalies(acked, records)
    assert got == {"backwards": 1, "rewritten": 1, "without_offset": 1}
    clean = {k: v for k, v in acked.items() if k in {("a", 0), ("b", 0)}}
    assert offset_anomalies(clean, records) == {"backwards": 0, "rewritten": 0, "without_offset": 0}


def test_clean_run_reports_all_zeros(cluster: Cluster) -> None:
    create_topic(cluster, "clean", rf=3)
    w = written(cluster, "clean")
    r = check(w, cluster.bootstrap_servers, "clean")
    assert r.acked > 100, r.summary()
    assert (r.lost, r.duplicated, r.reordered) == (0, 0, 0), r.summary()
    assert r.read == r.acked + r.unacked_present
    assert r.ok


def test_planted_duplicates_and_reorderings_are_counted(cluster: Cluster) -> None:
    create_topic(cluster, "planted", rf=3)
    w = written(cluster, "planted", seconds=1.0)
    # A second, non-idempotent producer writes three acknowledged records again, and a
    # writer of its own whose sequence goes backwards once.
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": False})
    for key, seq in [("w0", 0), ("w0", 1), ("w0", 2), ("x", 0), ("x", 2), ("x", 1)]:
        p.produce("planted", key=key.encode(), value=str(seq).encode())
        p.flush(10)  # one at a time: their order in the log is the order sent
    r = check(w, cluster.bootstrap_servers, "planted")
    assert r.lost == 0, r.summary()
    assert r.duplicated == 3, r.summary()
    assert r.reordered == 1, r.summary()
    # The records of writer "x" were never sent by the checker's writers: phantoms.
    assert r.phantom == 3, r.summary()
    assert r.unacked_present == r.read - 6 - r.acked, r.summary()
    assert not r.ok


def test_wiped_only_replica_is_reported_lost(cluster: Cluster) -> None:
    # Runs last in this module: it kills and restarts a broker.
    create_topic(cluster, "rf1", rf=1)
    w = written(cluster, "rf1", seconds=1.0)
    from tests.cluster.conftest import partitions

    leader = partitions(cluster.bootstrap_servers, "rf1")[0].leader
    b = next(b for b in cluster.brokers if b.broker_id == leader)
    b.kill()
    shutil.rmtree(b.data_dir / "logs")
    b.restart()
    r = check(w, cluster.bootstrap_servers, "rf1")
    assert r.acked > 50
    assert r.lost == r.acked, r.summary()  # its only copy is gone
    assert not r.ok
