"""Replication over ``inter.broker.listener.name``: clients use a SASL_PLAINTEXT listener,
brokers copy their leaders over a second listener that is PLAINTEXT, SSL or SASL_SSL
(PLAIN, with the listener's own JAAS credentials). Each broker registers every listener
with its real security protocol; the ISR stays whole and acks=all produce succeeds only
if the fetchers really reach their leaders there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from tests.cluster.conftest import wait_for
from tests.security.certs import Authority

USERS = {"broker": "broker-secret", "alice": "alice-secret"}
ALICE = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": "alice-secret",
}


def _jaas() -> str:
    """PLAIN's users, and the credentials this broker logs in with (Kafka's form)."""
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="broker" password="broker-secret" {users};'
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("pki")
    ca = Authority(directory, "ca")
    server = ca.issue("server", "localhost", server=True)
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.bundle),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.pem.cert),
    }


def _cluster(protocol: str, pki: dict[str, str], data_dir: Path) -> Cluster:
    overrides: dict[str, object] = {
        "listener.security.protocol.map": f"CLIENT:SASL_PLAINTEXT,INTERNAL:{protocol}",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": _jaas(),
        "zookeeper.session.timeout.ms": 6000,
        "replica.lag.time.max.ms": 10000,
        # Few partitions: the transaction coordinator's topic is created in the test.
        "transaction.state.log.num.partitions": 3,
    }
    if "SSL" in protocol:
        overrides.update(pki)
    if protocol.startswith("SASL"):
        overrides["listener.name.internal.plain.sasl.jaas.config"] = _jaas()
    return Cluster(
        brokers=3,
        listeners=("CLIENT", "INTERNAL"),
        client_config=ALICE,
        overrides=overrides,
        data_dir=data_dir,
    )


@pytest.fixture(params=["PLAINTEXT", "SSL", "SASL_SSL"])
def secured(
    request: pytest.FixtureRequest, pki: dict[str, str], tmp_path: Path
) -> Iterator[tuple[str, Cluster]]:
    with _cluster(request.param, pki, tmp_path) as c:
        yield request.param, c


def _isr(admin: AdminClient, topic: str) -> dict[int, list[int]]:
    t = admin.list_topics(topic, timeout=10).topics[topic]
    return {p: sorted(m.isrs) for p, m in t.partitions.items()}


def test_replicas_fetch_over_the_inter_broker_listener(secured: tuple[str, Cluster]) -> None:
    protocol, c = secured
    for b in c.brokers:
        data, _ = c.zk.get(znodes.broker_path(b.broker_id))
        assert znodes.security_protocols(data) == {
            "CLIENT": "SASL_PLAINTEXT",
            "INTERNAL": protocol,
        }
        assert json.loads(data)["endpoints"] == [
            f"CLIENT://127.0.0.1:{b.port}",
            f"INTERNAL://127.0.0.1:{b.extra_ports['INTERNAL']}",
        ]
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **ALICE})
    # min.insync.replicas=3: acks=all succeeds only while every follower keeps up.
    topic = NewTopic("replicated", 3, 3, config={"min.insync.replicas": "3"})
    admin.create_topics([topic], operation_timeout=30)["replicated"].result(30)
    wait_for(lambda: all(len(i) == 3 for i in _isr(admin, "replicated").values()), 30)
    producer = Producer(
        {"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 5, **ALICE}
    )

    def led_everywhere() -> bool:
        # Each broker learns the topic from ZooKeeper in its own time; a producer whose
        # metadata came from one that had not yet fails its records "Unknown partition".
        views = [
            AdminClient({"bootstrap.servers": b.bootstrap_servers, **ALICE}).list_topics(
                "replicated", timeout=5
            )
            for b in c.brokers
        ] + [producer.list_topics("replicated", timeout=5)]
        return all(
            (t := md.topics.get("replicated")) is not None
            and t.error is None
            and len(t.partitions) == 3
            and all(p.leader >= 0 for p in t.partitions.values())
            for md in views
        )

    wait_for(led_everywhere, 30)
    failures: list[object] = []
    for i in range(300):
        producer.produce(
            "replicated",
            str(i).encode(),
            partition=i % 3,
            on_delivery=lambda e, _m: e and failures.append(e),
        )
    assert producer.flush(60) == 0
    assert not failures, failures[:3]
    # Still whole after the writes (a fetcher that cannot reach its leader would have
    # been dropped after replica.lag.time.max.ms; the writes would have failed first).
    assert all(i == [1, 2, 3] for i in _isr(admin, "replicated").values())
    # Every follower has the data: read it from each broker's replica after moving
    # nothing -- the leader serves, the followers' log ends match (ISR), so a consumer of
    # every partition sees all 300.
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": f"check-{protocol}",
            "enable.auto.commit": False,
            **ALICE,
        }
    )
    consumer.assign([TopicPartition("replicated", p, 0) for p in range(3)])
    seen: set[bytes] = set()

    def all_read() -> bool:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            seen.add(m.value())
        return len(seen) == 300

    wait_for(all_read, 60, 0)
    consumer.close()
    # The followers' copies, on disk: each partition's log on all three brokers.
    for b in c.brokers:
        for p in range(3):
            logs = list((b.data_dir / "logs" / f"replicated-{p}").glob("*.log"))
            assert sum(f.stat().st_size for f in logs) > 0, (b.broker_id, p)
    _markers_cross_the_inter_broker_listener(c, protocol)


def _markers_cross_the_inter_broker_listener(c: Cluster, protocol: str) -> None:
    """A transaction over the three partitions (each led by another broker): the
    coordinator sends the markers of the two it does not lead to their leaders with
    WriteTxnMarkers on the inter-broker listener (TLS / SASL as configured); a marker
    that did not arrive leaves that partition's LSO stuck and its records unread."""
    producer = Producer(
        {"bootstrap.servers": c.bootstrap_servers, "transactional.id": f"tx-{protocol}", **ALICE}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in range(3):
        producer.produce("replicated", b"txn-%d" % p, partition=p)
    producer.commit_transaction(60)
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": f"committed-{protocol}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **ALICE,
        }
    )
    consumer.assign([TopicPartition("replicated", p, 0) for p in range(3)])
    seen: set[bytes] = set()

    def committed_read() -> bool:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None and m.value().startswith(b"txn-"):
            seen.add(m.value())
        return len(seen) == 3

    wait_for(committed_read, 30, 0)
    consumer.close()
