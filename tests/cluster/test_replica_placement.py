"""Where logs live on a real 3-broker cluster: a broker opens a partition's log only when
the partition's replica list names it; a reassignment that moves a replica away closes
that log and retires its dir (``-delete`` rename, then removal), the new replica copies
the data; a deleted topic's dirs go everywhere. And CreateTopics, ElectLeaders and
AlterPartitionReassignments answer within the request's ``timeout_ms``, with
REQUEST_TIMED_OUT for what the controller did not finish."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import RequestTimedOutError

from kafkalite.cluster import Cluster, ClusterBroker
from tests.cluster.conftest import settled, wait_for
from tests.cluster.test_admin_ops import _reassign, everywhere, set_state
from tests.cluster.test_cluster import consume, create, produce


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        brokers=3,
        overrides={"zookeeper.session.timeout.ms": 10000, "auto.leader.rebalance.enable": False},
        data_dir=tmp_path_factory.mktemp("placement"),
    ) as c:
        yield c


def _dirs(b: ClusterBroker, topic: str) -> set[str]:
    """The partition dirs of ``topic`` on broker ``b`` (retired ones excluded)."""
    logs = b.data_dir / "logs"
    return {
        d.name
        for d in logs.iterdir()
        if d.name.startswith(f"{topic}-") and not d.name.endswith("-delete")
    }


def test_logs_live_only_on_their_replicas_and_follow_a_reassignment(
    cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    create(c.bootstrap_servers, "placed", 3, 1)
    meta = settled([b.bootstrap_servers for b in c.brokers], "placed", 3)
    values = {p: [f"v{p}-{i}".encode() for i in range(5)] for p in range(3)}
    produce(c.bootstrap_servers, "placed", values)
    for b in c.brokers:
        expected = {f"placed-{p}" for p, m in meta.items() if b.broker_id in m.replicas}
        assert _dirs(b, "placed") == expected, (b.broker_id, meta)
    # Move partition 0's only replica to another broker.
    old = meta[0].replicas[0]
    new = next(b.broker_id for b in c.brokers if b.broker_id != old)
    done = _reassign(c, tmp_path, "execute", {("placed", 0): [new]})
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    everywhere(c, "placed", lambda v: list(v[0].replicas) == [new] and v[0].leader == new)
    old_broker, new_broker = c.brokers[old - 1], c.brokers[new - 1]
    wait_for(lambda: "placed-0" not in _dirs(old_broker, "placed"), 20)
    # Renamed at once, then removed in the background.
    wait_for(
        lambda: (
            not any(
                d.name.startswith("placed-0.") for d in (old_broker.data_dir / "logs").iterdir()
            )
        ),
        20,
    )
    assert "placed-0" in _dirs(new_broker, "placed")
    assert consume(c.bootstrap_servers, "placed", 0, 5) == values[0]
    # A deleted topic leaves no dir on any broker.
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.delete_topics(["placed"], operation_timeout=30)["placed"].result(30)
    for b in c.brokers:
        wait_for(lambda b=b: not _dirs(b, "placed"), 20)


def _paused_controller(c: Cluster) -> tuple[ClusterBroker, ClusterBroker]:
    """(the controller's broker, another broker)."""
    controller = c.brokers[c.controller_id() - 1]
    other = next(b for b in c.brokers if b is not controller)
    return controller, other


def test_admin_requests_answer_within_their_timeout(cluster: Cluster) -> None:
    """With the controller paused nothing it must do finishes: the broker that took the
    request answers by the request's timeout_ms, REQUEST_TIMED_OUT per partition."""
    c = cluster
    create(c.bootstrap_servers, "slow", 1, 2)
    meta = settled([b.bootstrap_servers for b in c.brokers], "slow", 1)
    # Leadership away from the preferred replica, so a preferred election has work to do.
    set_state(c, "slow", 0, meta[0].replicas[1], list(meta[0].replicas))
    everywhere(c, "slow", lambda v: v[0].leader == meta[0].replicas[1])
    controller, other = _paused_controller(c)
    admin = KafkaAdminClient(bootstrap_servers=other.bootstrap_servers, request_timeout_ms=20000)
    spare = min({b.broker_id for b in c.brokers} - set(meta[0].replicas))
    target = [spare, meta[0].replicas[0]]
    try:
        # Sent to a broker that is not the controller, as a client with a stale view of
        # the controller would (any broker forwards it to the controller side).
        admin._controller_id = other.broker_id
        controller.pause()
        started = time.monotonic()
        elected = admin.elect_leaders(0, {"slow": [0]}, timeout_ms=2000, raise_errors=False)
        took_election = time.monotonic() - started
        started = time.monotonic()
        result = admin.alter_partition_reassignments(
            {KTopicPartition("slow", 0): target}, timeout_ms=2000
        )
        took = time.monotonic() - started
    finally:
        controller.resume()
        admin.close()
    codes = [p.error_code for r in elected.replica_election_results for p in r.partition_result]
    assert codes == [RequestTimedOutError.errno], elected
    assert 1.0 < took_election < 3.5, took_election
    assert result == {KTopicPartition("slow", 0): RequestTimedOutError}
    assert 1.0 < took < 3.5, took
    # The queued reassignment is still carried out once the controller is back.
    everywhere(c, "slow", lambda v: sorted(v[0].replicas) == sorted(target))


def test_a_broker_whose_chosen_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ports are chosen before the broker binds them: one taken in between (here, on
    purpose, by a listening socket) makes the broker exit, and it is started again on a
    fresh port."""
    import socket

    from kafkalite import cluster as cluster_module

    real = cluster_module.free_port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        picks = iter([taken])
        monkeypatch.setattr(cluster_module, "free_port", lambda: next(picks, None) or real())
        with Cluster(brokers=1, data_dir=tmp_path) as c:
            assert c.brokers[0].port not in (0, taken)
            assert "Address already in use" in c.brokers[0].log_tail()
            md = AdminClient({"bootstrap.servers": c.bootstrap_servers}).list_topics(timeout=10)
            assert list(md.brokers) == [1]


def test_create_topics_answers_each_topic_within_the_request_timeout(cluster: Cluster) -> None:
    """The topics of one CreateTopics wait for the controller together, not one after
    another: with the controller paused all three are REQUEST_TIMED_OUT by the request's
    2 s, and are created once it is back (as Kafka's controller finishes them)."""
    c = cluster
    controller, other = _paused_controller(c)
    admin = KafkaAdminClient(bootstrap_servers=other.bootstrap_servers, request_timeout_ms=20000)
    names = [f"late-{i}" for i in range(3)]
    try:
        # To a broker that is not the controller, as a client with a stale view would.
        admin._controller_id = other.broker_id
        controller.pause()
        started = time.monotonic()
        response = admin.create_topics(
            [NewTopic(n, 2, 2) for n in names], timeout_ms=2000, raise_errors=False
        )
        took = time.monotonic() - started
    finally:
        controller.resume()
        admin.close()
    errors = {t["name"]: t["error_code"] for t in response["topics"]}
    assert errors == {n: RequestTimedOutError.errno for n in names}, response
    assert 1.0 < took < 3.5, took
    for n in names:
        settled([b.bootstrap_servers for b in c.brokers], n, 2)


def test_one_create_topics_writes_its_topics_together(cluster: Cluster) -> None:
    """The topics of one CreateTopics reach ZooKeeper in one transaction (their znodes
    share the zxid that created them) and the controller creates all their partitions'
    states in one pass (here one transaction too); a topic that exists already is refused
    on its own while the others are created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic as CNewTopic
    from kazoo.client import KazooClient

    c = cluster
    create(c.bootstrap_servers, "together-old", 1, 1)
    names = [f"together-{i}" for i in range(6)]
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    futures = admin.create_topics(
        [CNewTopic(n, 4, 3) for n in names] + [CNewTopic("together-old", 2, 3)],
        operation_timeout=30,
    )
    for n in names:
        futures[n].result(30)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        futures["together-old"].result(30)
    zk = KazooClient(hosts=c.zookeeper_connect)
    zk.start(timeout=30)
    try:
        topics = {zk.exists(f"/brokers/topics/{n}").czxid for n in names}
        states = {
            zk.exists(f"/brokers/topics/{n}/partitions/{p}/state").czxid
            for n in names
            for p in range(4)
        }
    finally:
        zk.stop()
        zk.close()
    assert len(topics) == 1, topics
    assert len(states) == 1, states
    assert states != topics
    for n in names:
        settled([b.bootstrap_servers for b in c.brokers], n, 4)


def test_delete_and_grow_answer_each_topic_within_the_request_timeout(cluster: Cluster) -> None:
    """DeleteTopics and CreatePartitions ask the controller for all their topics at once:
    with the controller paused every topic is REQUEST_TIMED_OUT by the request's 2 s (not
    one controller wait after another), and the work is done once it is back."""
    from kafka.admin import NewPartitions

    c = cluster
    doomed = [f"doomed-{i}" for i in range(3)]
    growing = [f"growing-{i}" for i in range(3)]
    for n in doomed + growing:
        create(c.bootstrap_servers, n, 1, 2)
    for n in doomed + growing:
        settled([b.bootstrap_servers for b in c.brokers], n, 1)
    controller, other = _paused_controller(c)
    admin = KafkaAdminClient(bootstrap_servers=other.bootstrap_servers, request_timeout_ms=20000)
    try:
        admin._controller_id = other.broker_id
        controller.pause()
        started = time.monotonic()
        deleted = admin.delete_topics(doomed, timeout_ms=2000, raise_errors=False)
        took_delete = time.monotonic() - started
        started = time.monotonic()
        grown = admin.create_partitions(
            {n: NewPartitions(2) for n in growing}, timeout_ms=2000, raise_errors=False
        )
        took_grow = time.monotonic() - started
    finally:
        controller.resume()
        admin.close()
    deleted_codes = {t["name"]: t["error_code"] for t in deleted["topics"]}
    grown_codes = {r.name: r.error_code for r in grown.results}
    assert deleted_codes == dict.fromkeys(doomed, RequestTimedOutError.errno), deleted
    assert grown_codes == dict.fromkeys(growing, RequestTimedOutError.errno), grown
    assert 1.0 < took_delete < 3.5, took_delete
    assert 1.0 < took_grow < 3.5, took_grow
    for n in growing:
        settled([b.bootstrap_servers for b in c.brokers], n, 2)
    lister = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    wait_for(lambda: not set(doomed) & set(lister.list_topics(timeout=10).topics), timeout=30)
