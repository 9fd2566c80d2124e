"""A real 3-broker cluster: a private ZooKeeper and three `kafkalite broker` processes on
loopback (the `kafkalite_cluster` fixture), driven with confluent-kafka."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite import _core
from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from kafkalite.controller.zookeeper import free_port
from tests.cluster.conftest import partitions, settled, wait_for

SESSION_S = 6.0


def create(bootstrap: str, topic: str, n: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, n, rf)], operation_timeout=30)[topic].result(30)


def produce(bootstrap: str, topic: str, per_partition: dict[int, list[bytes]]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    failures: list[object] = []
    for partition, values in per_partition.items():
        for v in values:
            p.produce(
                topic, v, partition=partition, on_delivery=lambda e, _m: e and failures.append(e)
            )
    assert p.flush(30) == 0
    assert not failures, failures


def consume(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}-{partition}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(out) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            out.append(m.value())
    c.close()
    return out


def test_rf3_topic_spreads_leaders_and_serves_through_one_address(
    kafkalite_cluster: Cluster,
) -> None:
    c = kafkalite_cluster
    one = c.brokers[0].bootstrap_servers
    create(one, "orders", 6, 3)
    settled([b.bootstrap_servers for b in c.brokers], "orders", 6)
    # Every broker answers for the whole cluster.
    for b in c.brokers:
        parts = partitions(b.bootstrap_servers, "orders")
        assert sorted(parts) == list(range(6))
        for p in parts.values():
            assert sorted(p.replicas) == [1, 2, 3]
            assert sorted(p.isr) == [1, 2, 3]
            assert p.leader == p.replicas[0]
            assert p.leader_epoch == 0
    leaders = [p.leader for p in partitions(one, "orders").values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3], "two leaderships per broker"
    with pytest.raises(KafkaException) as e:
        create(one, "orders", 1, 1)
    assert "TOPIC_ALREADY_EXISTS" in str(e.value)
    with pytest.raises(KafkaException) as e:
        create(one, "too-wide", 1, 4)
    assert "INVALID_REPLICATION_FACTOR" in str(e.value)

    values = {p: [f"{p}-{i}".encode() for i in range(20)] for p in range(6)}
    produce(one, "orders", values)
    for p in range(6):
        assert consume(one, "orders", p, 20) == values[p]


def test_killing_a_leader_moves_its_partitions_to_the_isr(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    create(c.bootstrap_servers, "events", 6, 3)
    before = settled([b.bootstrap_servers for b in c.brokers], "events", 6)
    victim = before[0].leader
    led = {p for p, m in before.items() if m.leader == victim}
    survivor = next(b for b in c.brokers if b.broker_id != victim)
    kept = [p for p in range(6) if p not in led]
    values = {p: [f"{p}-{i}".encode() for i in range(5)] for p in kept}
    produce(c.bootstrap_servers, "events", values)

    killed_at = time.monotonic()
    c.brokers[victim - 1].kill()

    def moved() -> dict[int, object] | None:
        now = partitions(survivor.bootstrap_servers, "events")
        # The controller rewrites partitions one by one: wait for the kept ones' ISR too.
        done = all(now[p].leader not in (victim, -1) for p in led) and all(
            victim not in now[p].isr for p in kept
        )
        return now if done else None

    after = wait_for(moved, timeout=SESSION_S + 10)
    took = time.monotonic() - killed_at
    assert took < SESSION_S + 5, f"failover took {took:.1f} s"
    for p in led:
        m = after[p]
        assert m.leader in before[p].isr
        assert m.leader_epoch > before[p].leader_epoch
        assert victim not in m.isr
    for p in kept:
        assert after[p].leader == before[p].leader
        assert after[p].leader_epoch > before[p].leader_epoch  # the ISR shrank
    # Clients carry on: the moved partitions take writes at their new leaders, and the
    # others still serve what they had.
    produce(survivor.bootstrap_servers, "events", {p: [b"after"] for p in led})
    for p in led:
        assert consume(survivor.bootstrap_servers, "events", p, 1) == [b"after"]
    for p in kept:
        assert consume(survivor.bootstrap_servers, "events", p, 5) == values[p]

    # Restarted, the broker rejoins the cluster.
    c.brokers[victim - 1].restart()
    assert str(victim) in c.zk.get_children(znodes.BROKER_IDS)
    # Its partition dirs survived the restart (kept as its own, not cleaned as orphans).
    logs = c.brokers[victim - 1].data_dir / "logs"
    assert all((logs / f"events-{p}").is_dir() for p in range(6))
    admin = AdminClient({"bootstrap.servers": survivor.bootstrap_servers})
    wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 3)


def test_controller_failover_and_topic_deletion(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    first = c.controller_id()
    epoch = int(c.zk.get(znodes.CONTROLLER_EPOCH)[0])
    c.brokers[first - 1].kill()
    new = wait_for(
        lambda: c.controller_id() not in (-1, first) and c.controller_id(), SESSION_S + 10
    )
    # The new controller takes the seat, then bumps the epoch (as Kafka's did).
    wait_for(lambda: int(c.zk.get(znodes.CONTROLLER_EPOCH)[0]) > epoch, 5)
    other = next(b for b in c.brokers if b.broker_id not in (first,))
    admin = AdminClient({"bootstrap.servers": other.bootstrap_servers})
    wait_for(lambda: admin.list_topics(timeout=5).controller_id == new)

    # The new controller does the work: create, grow, delete across the live brokers.
    create(other.bootstrap_servers, "doomed", 2, 2)
    live = [b.bootstrap_servers for b in c.brokers if b.broker_id != first]
    parts = settled(live, "doomed", 2)
    assert all(first not in p.replicas for p in parts.values())
    admin.create_partitions([NewPartitions("doomed", 4)])["doomed"].result(30)
    wait_for(lambda: sorted(partitions(other.bootstrap_servers, "doomed")) == [0, 1, 2, 3])
    admin.delete_topics(["doomed"], operation_timeout=30)["doomed"].result(30)
    for b in c.brokers:
        if b.broker_id != first:
            wait_for(lambda b=b: partitions(b.bootstrap_servers, "doomed") == {})
            data = b.data_dir / "logs"
            wait_for(lambda d=data: not any(x.name.startswith("doomed-") for x in d.iterdir()))
    assert not c.zk.exists(znodes.topic_path("doomed"))


def _broker_cmd(*overrides: str) -> list[str]:
    cmd = [sys.executable, "-m", "kafkalite.cli", "broker"]
    for o in overrides:
        cmd += ["--override", o]
    return cmd


def test_same_broker_id_twice_is_refused(kafkalite_cluster: Cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    c = kafkalite_cluster
    out = subprocess.run(
        _broker_cmd(
            "broker.id=2",
            f"zookeeper.connect={c.zookeeper_connect}",
            f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
            f"log.dirs={tmp_path / 'dup'}",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert "broker.id 2 is already registered" in out.stderr
    assert c.brokers[1].running


def test_unreachable_zookeeper_fails_within_the_connection_timeout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    out = subprocess.run(
        _broker_cmd(
            "broker.id=1",
            f"zookeeper.connect=127.0.0.1:{free_port()}/kafka",
            "zookeeper.connection.timeout.ms=2000",
            f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
            f"log.dirs={tmp_path / 'data'}",
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    took = time.monotonic() - started
    assert out.returncode == 1
    assert "cannot connect to ZooKeeper at '127.0.0.1:" in out.stderr
    assert "within 2000 ms" in out.stderr
    assert took < 15, f"took {took:.1f} s"


def test_sigterm_moves_leaderships_before_the_broker_exits(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    create(c.bootstrap_servers, "handover", 6, 3)
    before = settled([b.bootstrap_servers for b in c.brokers], "handover", 6)
    # The controller's own broker: it must hand over its leaderships itself first.
    victim = c.controller_id()
    led = [p for p, m in before.items() if m.leader == victim]
    assert led
    stopped_at = time.monotonic()
    c.brokers[victim - 1].stop()
    took = time.monotonic() - stopped_at
    # Already moved when the process is gone: no session timeout was waited for.
    survivor = next(b for b in c.brokers if b.broker_id != victim)
    after = partitions(survivor.bootstrap_servers, "handover")
    for p in led:
        assert after[p].leader in before[p].isr and after[p].leader != victim
        assert after[p].leader_epoch > before[p].leader_epoch
    assert took < SESSION_S, f"controlled shutdown took {took:.1f} s"
    wait_for(lambda: c.controller_id() not in (-1, victim))


def test_a_paused_broker_loses_its_leaderships_and_rejoins(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    create(c.bootstrap_servers, "paused", 3, 3)
    before = settled([b.bootstrap_servers for b in c.brokers], "paused", 3)
    victim = before[0].leader
    survivor = next(b for b in c.brokers if b.broker_id != victim)
    c.brokers[victim - 1].pause()
    try:
        wait_for(
            lambda: partitions(survivor.bootstrap_servers, "paused")[0].leader not in (victim, -1),
            SESSION_S + 10,
        )
    finally:
        c.brokers[victim - 1].resume()
    # Its session expired while it slept: it registers again with a new one, and learns
    # it no longer leads partition 0, so it tells clients so.
    wait_for(lambda: str(victim) in c.zk.get_children(znodes.BROKER_IDS), SESSION_S + 10)
    moved = partitions(survivor.bootstrap_servers, "paused")[0]
    wait_for(
        lambda: (
            partitions(c.brokers[victim - 1].bootstrap_servers, "paused")[0].leader == moved.leader
        )
    )


def test_kafka_python_produces_and_consumes_through_the_cluster(
    kafkalite_cluster: Cluster,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    c = kafkalite_cluster
    create(c.bootstrap_servers, "kp", 3, 3)
    settled([b.bootstrap_servers for b in c.brokers], "kp", 3)
    producer = KafkaProducer(bootstrap_servers=c.brokers[2].bootstrap_servers, acks=1)
    for p in range(3):
        for i in range(10):
            producer.send("kp", f"{p}-{i}".encode(), partition=p)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=c.brokers[1].bootstrap_servers,
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
    )
    consumer.assign([KTopicPartition("kp", p) for p in range(3)])
    consumer.seek_to_beginning()
    got = []
    for m in consumer:  # the timeout only ends a read that came up short
        got.append(m.value)
        if len(got) == 30:
            break
    consumer.close()
    assert sorted(got) == sorted(f"{p}-{i}".encode() for p in range(3) for i in range(10))


def test_cluster_up_prints_bootstrap_servers_and_stops_on_ctrl_c(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import signal

    cmd = [sys.executable, "-m", "kafkalite.cli", "cluster", "up", "--brokers", "2"]
    proc = subprocess.Popen(
        [*cmd, "--data-dir", str(tmp_path / "c")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("bootstrap.servers="):
                break
        bootstrap = lines[-1].strip().split("=", 1)[1]
        assert len(bootstrap.split(",")) == 2
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2]
        pids = [int(line.rsplit("pid ", 1)[1].rstrip(")\n")) for line in lines if "(pid" in line]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_unclean_election_only_where_the_topic_allows_it(kafkalite_cluster: Cluster) -> None:
    c = kafkalite_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    # Manual assignments: broker 1 leads, broker 2 follows; broker 3 holds nothing.
    topics = [
        NewTopic("clean", num_partitions=1, replica_assignment=[[1, 2]]),
        NewTopic(
            "unclean",
            num_partitions=1,
            replica_assignment=[[1, 2]],
            config={"unclean.leader.election.enable": "true"},
        ),
    ]
    for f in admin.create_topics(topics, operation_timeout=30).values():
        f.result(30)
    everyone = [b.bootstrap_servers for b in c.brokers]
    for t in ("clean", "unclean"):
        m = settled(everyone, t, 1)[0]
        assert (m.leader, m.replicas, sorted(m.isr)) == (1, [1, 2], [1, 2])
    third = c.brokers[2].bootstrap_servers
    # Broker 1 dies: 2 takes over from the ISR, which shrinks to [2].
    c.brokers[0].kill()
    for t in ("clean", "unclean"):
        m = wait_for(lambda t=t: (p := partitions(third, t)[0]).leader == 2 and p, SESSION_S + 10)
        assert m.isr == [2]
    # Broker 1 comes back, outside the ISR (nothing replicates yet); then 2 dies too.
    c.brokers[0].restart()
    c.brokers[1].kill()
    # Unclean: the out-of-sync replica leads. Clean: no leader rather than lost data.
    m = wait_for(lambda: (p := partitions(third, "unclean")[0]).leader == 1 and p, SESSION_S + 10)
    assert m.isr == [1]
    # The controller handles the two topics in the same pass, in no set order.
    wait_for(lambda: _leaderless(third, "clean"), SESSION_S + 10)
    with _core.KafkaClient(third, request_timeout_ms=5000) as client:
        clean = client.metadata(["clean"]).topics["clean"].partitions[0]
    assert clean.isr == [2]


def _leaderless(bootstrap: str, topic: str) -> bool:
    """Metadata answers LEADER_NOT_AVAILABLE with leader -1 for partition 0."""
    with _core.KafkaClient(bootstrap, request_timeout_ms=5000) as client:
        p = client.metadata([topic]).topics[topic].partitions[0]
    return p.leader == -1


def test_auto_creation_and_topic_configs_go_through_zookeeper(
    kafkalite_cluster: Cluster,
) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    c = kafkalite_cluster
    # A producer's Metadata for an unknown topic asks the controller side to create it
    # (default.replication.factor, num.partitions) and is told LEADER_NOT_AVAILABLE until
    # it has a leader; the write then goes through.
    produce(c.brokers[0].bootstrap_servers, "auto-made", {0: [b"first"]})
    assert c.zk.exists(znodes.topic_path("auto-made"))
    assert consume(c.bootstrap_servers, "auto-made", 0, 1) == [b"first"]

    create(c.bootstrap_servers, "tuned", 1, 3)
    admin = AdminClient({"bootstrap.servers": c.brokers[1].bootstrap_servers})
    entry = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", "tuned", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)
    assert b'"retention.ms":"3600000"' in c.zk.get(znodes.topic_config_path("tuned"))[0]
    # Every broker applies it: DescribeConfigs at another one shows the override.
    other = AdminClient({"bootstrap.servers": c.brokers[2].bootstrap_servers})

    def described() -> bool:
        r = ConfigResource("topic", "tuned")
        entry = other.describe_configs([r])[r].result(30)["retention.ms"]
        return entry.value == "3600000"

    wait_for(described)


def test_the_readme_cluster_example_runs_as_written() -> None:
    from tests.docs.test_readme import blocks

    (example,) = blocks("A local cluster", "python")
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bootstrap, controller = done.stdout.split()
    assert len(bootstrap.split(",")) == 3
    assert int(controller) in (1, 2, 3)


def test_create_partitions_places_added_partitions_as_the_client_says(
    kafkalite_cluster: Cluster,
) -> None:
    # librdkafka's test 0081 grows topics with its own replica lists for the new
    # partitions and then checks Metadata for them, as Kafka's controller honours them.
    c = kafkalite_cluster
    bootstrap = c.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create(bootstrap, "placed", 1, 2)
    settled([bootstrap], "placed", 1)
    grow = NewPartitions("placed", 3, replica_assignment=[[3, 1], [2, 3]])
    admin.create_partitions([grow], operation_timeout=30)["placed"].result(30)
    parts = settled([b.bootstrap_servers for b in c.brokers], "placed", 3)
    assert (parts[1].replicas, parts[2].replicas) == ([3, 1], [2, 3])

    unknown = NewPartitions("placed", 4, replica_assignment=[[3, 9]])
    with pytest.raises(KafkaException, match="Unknown broker"):
        admin.create_partitions([unknown], operation_timeout=30)["placed"].result(30)
    wrong_factor = NewPartitions("placed", 4, replica_assignment=[[1]])
    with pytest.raises(KafkaException, match="same number of replicas"):
        admin.create_partitions([wrong_factor], operation_timeout=30)["placed"].result(30)
    assert len(partitions(bootstrap, "placed")) == 3
