"""`replica.fetch.min.bytes` on a real 2-broker cluster: a follower's Fetch asks the leader
for at least that many bytes, so a small record reaches it only when the fetch's
`replica.fetch.wait.max.ms` runs out, not at once as with Kafka's default of 1 byte."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkalite.cluster import Cluster
from tests.cluster.conftest import settled, wait_for
from tests.cluster.test_cluster import create, produce
from tests.replication.test_replication import leader, segment_bytes

WAIT_MS = 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        brokers=2,
        overrides={
            "zookeeper.session.timeout.ms": 6000,
            "replica.fetch.min.bytes": 1_000_000,
            "replica.fetch.wait.max.ms": WAIT_MS,
        },
        data_dir=tmp_path_factory.mktemp("fetch-min-bytes"),
    ) as c:
        yield c


def test_a_follower_waits_for_replica_fetch_min_bytes(cluster: Cluster) -> None:
    create(cluster.bootstrap_servers, "lazy", 1, 2)
    settled([b.bootstrap_servers for b in cluster.brokers], "lazy", 1)
    lead = leader(cluster, "lazy")
    follower = next(b for b in cluster.brokers if b is not lead)

    def follower_has(size: int) -> bool:
        return len(segment_bytes(follower, "lazy", 0)) > size

    produce(lead.bootstrap_servers, "lazy", {0: [b"first"]})
    wait_for(lambda: follower_has(0), timeout=3 * WAIT_MS / 1000, interval=0.01)
    # The follower's next Fetch went out as the first record came: it now waits the whole
    # replica.fetch.wait.max.ms for a megabyte that a second small record does not make.
    had = len(segment_bytes(follower, "lazy", 0))
    started = time.monotonic()
    produce(lead.bootstrap_servers, "lazy", {0: [b"second"]})
    wait_for(lambda: follower_has(had), timeout=3 * WAIT_MS / 1000, interval=0.01)
    took = time.monotonic() - started
    assert took >= WAIT_MS / 1000 * 0.6, took
