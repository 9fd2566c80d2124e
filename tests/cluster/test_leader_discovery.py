"""KIP-951 leader discovery on a real 3-broker cluster: a Produce (v10+) sent to a broker
that does not lead the partition, or a Fetch (v16+) sent to one that hosts no replica of
it, is refused NOT_LEADER_OR_FOLLOWER (a stale leader epoch: FENCED_LEADER_EPOCH) and names
the current leader and its epoch, with the leader's endpoint at the top of the response,
as Kafka 4.1 answers; librdkafka moves to the named leader from that answer alone. A
follower serves a consumer's Fetch v11+ itself (KIP-392, fetch from follower), as Kafka's
does.

The requests are built and read with kafka-python's protocol classes and sent over plain
sockets, so each answer is seen exactly as the broker wrote it."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from kafkalite import _core
from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from tests.broker import rawproto
from tests.cluster.conftest import partitions, wait_for

NOT_LEADER = _core.error_code("NOT_LEADER_OR_FOLLOWER")
FENCED = _core.error_code("FENCED_LEADER_EPOCH")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # No automatic rebalance: the tests move leaders themselves.
    with Cluster(
        brokers=3,
        overrides={"zookeeper.session.timeout.ms": 6000, "auto.leader.rebalance.enable": False},
        data_dir=tmp_path_factory.mktemp("leader-discovery"),
    ) as c:
        yield c


def create_assigned(c: Cluster, topic: str, replicas: list[int]) -> None:
    """One partition on ``replicas``, the first its preferred leader; waits until every
    broker knows its leader."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    new = NewTopic(topic, num_partitions=1, replica_assignment=[replicas])
    admin.create_topics([new], operation_timeout=30)[topic].result(30)
    wait_for(lambda: all(leader_of(c, b.broker_id, topic) >= 0 for b in c.brokers))


def leader_of(c: Cluster, broker_id: int, topic: str) -> int:
    view = partitions(c.brokers[broker_id - 1].bootstrap_servers, topic)
    return view[0].leader if 0 in view else -1


def state(c: Cluster, topic: str) -> znodes.LeaderAndIsr:
    data, _ = c.zk.get(znodes.partition_state_path(topic, 0))
    return znodes.parse_state(data)


def topic_id(c: Cluster, topic: str) -> uuid.UUID:
    data, _ = c.zk.get(znodes.topic_path(topic))
    _, tid = znodes.parse_topic(data)
    assert tid is not None
    return tid


def produce(bootstrap: str, topic: str, version: int) -> Any:
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(
                        index=0, records=_core.build_batch([(None, b"hint")])
                    )
                ],
            )
        ],
    )
    response = rawproto.exchange(bootstrap, request, ProduceResponse, version)
    (answer,) = response.responses[0].partition_responses
    return response, answer


def fetch(bootstrap: str, c: Cluster, topic: str, version: int, epoch: int = -1) -> Any:
    request = FetchRequest(
        replica_id=-1,
        replica_state=FetchRequest.ReplicaState(replica_id=-1, replica_epoch=-1),
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                topic_id=topic_id(c, topic),
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    response = rawproto.exchange(bootstrap, request, FetchResponse, version)
    (answer,) = response.responses[0].partitions
    return response, answer


def endpoints(response: Any) -> list[tuple[int, str, int]]:
    return [(n.node_id, n.host, n.port) for n in response.node_endpoints]


def endpoint_of(c: Cluster, broker_id: int) -> tuple[int, str, int]:
    host, port = c.brokers[broker_id - 1].bootstrap_servers.rsplit(":", 1)
    return (broker_id, host, int(port))


def hint(answer: Any) -> tuple[int, int] | None:
    """(leader id, epoch) named, or None when the answer carries none."""
    leader = answer.current_leader
    return None if leader is None else (leader.leader_id, leader.leader_epoch)


def test_a_follower_and_a_non_replica_name_the_leader(cluster: Cluster) -> None:
    c = cluster
    create_assigned(c, "kip951-follower", [1, 2])
    s = state(c, "kip951-follower")
    assert s.leader == 1
    leader = endpoint_of(c, 1)
    # Broker 2 follows the partition, broker 3 hosts no replica of it: both refuse a
    # write and name broker 1; a consumer's read only 3 refuses (2, a replica, serves it).
    for asked in (2, 3):
        bootstrap = c.brokers[asked - 1].bootstrap_servers
        for version in (10, 11, 12):
            response, answer = produce(bootstrap, "kip951-follower", version)
            assert answer.error_code == NOT_LEADER
            assert hint(answer) == (1, s.leader_epoch), (asked, version)
            assert endpoints(response) == [leader]
        for version in (16, 17, 18):
            response, answer = fetch(bootstrap, c, "kip951-follower", version)
            if asked == 2:
                assert answer.error_code == 0, version
                assert hint(answer) is None
                assert response.node_endpoints == []
                continue
            assert answer.error_code == NOT_LEADER
            assert hint(answer) == (1, s.leader_epoch), (asked, version)
            assert endpoints(response) == [leader]
        # Versions before KIP-951 carry neither.
        response, answer = produce(bootstrap, "kip951-follower", 9)
        assert answer.error_code == NOT_LEADER
        assert hint(answer) is None
        response, answer = fetch(bootstrap, c, "kip951-follower", 15)
        assert answer.error_code == (0 if asked == 2 else NOT_LEADER)
        assert hint(answer) is None
        assert response.node_endpoints == []
    # The leader itself answers with neither.
    response, answer = produce(c.brokers[0].bootstrap_servers, "kip951-follower", 10)
    assert answer.error_code == 0
    assert hint(answer) is None
    assert response.node_endpoints == []


def move_leader_off_and_back(c: Cluster, topic: str) -> int:
    """The preferred leader (broker 1) shuts down, so leadership moves to broker 2; it
    restarts and rejoins the ISR. Returns the leader epoch then (leader 2)."""
    c.brokers[0].stop()
    wait_for(lambda: state(c, topic).leader == 2)
    c.brokers[0].start()
    wait_for(lambda: 1 in state(c, topic).isr, timeout=30)
    wait_for(lambda: all(leader_of(c, b.broker_id, topic) == 2 for b in c.brokers))
    return state(c, topic).leader_epoch


def test_after_a_leader_change_the_old_leader_names_the_new_one(cluster: Cluster) -> None:
    c = cluster
    create_assigned(c, "kip951-moved", [1, 2, 3])
    first = state(c, "kip951-moved").leader_epoch
    epoch = move_leader_off_and_back(c, "kip951-moved")
    assert epoch > first
    old_leader = c.brokers[0].bootstrap_servers
    response, answer = produce(old_leader, "kip951-moved", 11)
    assert answer.error_code == NOT_LEADER
    assert hint(answer) == (2, epoch)
    assert endpoints(response) == [endpoint_of(c, 2)]
    # A follower again, it serves a consumer's read in the current epoch itself (KIP-392).
    response, answer = fetch(old_leader, c, "kip951-moved", 17, epoch=epoch)
    assert answer.error_code == 0
    assert hint(answer) is None
    # A consumer still on the old epoch is fenced, by the old leader and the new alike,
    # and told the current one.
    for asked in (1, 2):
        bootstrap = c.brokers[asked - 1].bootstrap_servers
        response, answer = fetch(bootstrap, c, "kip951-moved", 16, epoch=first)
        assert answer.error_code == FENCED, asked
        assert hint(answer) == (2, epoch)
        assert endpoints(response) == [endpoint_of(c, 2)]
    # The new leader serves the current epoch.
    response, answer = fetch(c.brokers[1].bootstrap_servers, c, "kip951-moved", 16, epoch=epoch)
    assert answer.error_code == 0
    assert hint(answer) is None
    assert response.node_endpoints == []


def test_librdkafka_follows_the_named_leader_and_keeps_producing(cluster: Cluster) -> None:
    c = cluster
    create_assigned(c, "kip951-client", [1, 2, 3])
    move_leader_off_and_back(c, "kip951-client")
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    log = logging.getLogger("kip951-librdkafka")
    log.addHandler(Collect())
    log.setLevel(logging.DEBUG)
    p = Producer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "debug": "metadata",
            "logger": log,
        }
    )
    delivered: list[int] = []
    failed: list[object] = []

    def on_delivery(err: object, msg: Any) -> None:
        (failed if err is not None else delivered).append(err or msg.offset())

    def send(n: int) -> None:
        for _ in range(n):
            p.produce("kip951-client", b"v", partition=0, on_delivery=on_delivery)
            p.poll(0)
            time.sleep(0.01)

    send(50)
    assert p.flush(30) == 0
    # Preferred election: leadership returns to broker 1 while broker 2 stays up, so the
    # producer's next batch reaches broker 2, which names broker 1.
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    tp = TopicPartition("kip951-client", 0)
    (error,) = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30).values()
    assert error is None
    epoch = state(c, "kip951-client").leader_epoch
    wait_for(lambda: all(leader_of(c, b.broker_id, "kip951-client") == 1 for b in c.brokers))
    send(50)
    assert p.flush(30) == 0
    assert not failed, failed
    assert len(delivered) == 100
    assert sorted(delivered) == list(range(100))
    # librdkafka's log of a leader taken from a Produce answer (KIP-951), not from Metadata.
    moved = f"]: updated with leader 1 and epoch {epoch}"
    assert any("METADATAUPDATE" in line and moved in line for line in lines), [
        line for line in lines if "leader" in line
    ][-20:]
