"""Leader elections, partition reassignment, log dirs and producer-id blocks on a real
3-broker cluster, through confluent-kafka's admin client and Kafka's own Java tools
(kafka-leader-election, kafka-reassign-partitions, kafka-log-dirs, kafka-topics).

Without a replication data path a broker that left the ISR never rejoins it, so the
tests that need a leader away from its preferred replica set the partition state in
ZooKeeper as an earlier failover would have left it (one compare-and-set write, as the
controller's own), then let the cluster repair it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite import _core
from kafkalite.bench import kafka_ref
from kafkalite.cluster import Cluster
from kafkalite.controller import znodes
from kafkalite.controller.zookeeper import free_port
from tests.cluster.conftest import partitions, settled, wait_for
from tests.cluster.test_cluster import _broker_cmd, create, produce


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # No automatic rebalance here: the tests move leaders away on purpose.
    with Cluster(
        brokers=3,
        overrides={"zookeeper.session.timeout.ms": 6000, "auto.leader.rebalance.enable": False},
        data_dir=tmp_path_factory.mktemp("admin-ops"),
    ) as c:
        yield c


def _tool(main_class: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, list(args))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if check:
        assert done.returncode == 0, (main_class, done.stdout[-2000:], done.stderr[-3000:])
    return done


def set_state(c: Cluster, topic: str, p: int, leader: int, isr: list[int]) -> None:
    """Leader and ISR as a failover would leave them, with the next leader epoch."""
    path = znodes.partition_state_path(topic, p)
    data, stat = c.zk.get(path)
    old = znodes.parse_state(data)
    new = znodes.LeaderAndIsr(leader, old.leader_epoch + 1, isr, old.controller_epoch)
    c.zk.set(path, znodes.state_json(new), version=stat.version)


def everywhere(c: Cluster, topic: str, check) -> dict[int, _core.PartitionMetadata]:  # type: ignore[no-untyped-def]
    """Wait until every broker's Metadata for ``topic`` satisfies ``check``."""

    def ok() -> dict[int, _core.PartitionMetadata] | None:
        views = [partitions(b.bootstrap_servers, topic) for b in c.brokers]
        return views[0] if all(v and check(v) for v in views) else None

    return wait_for(ok, 20)


def describe(c: Cluster, topic: str) -> str:
    return _tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        c.brokers[0].bootstrap_servers,
        "--describe",
        "--topic",
        topic,
    ).stdout


def assert_described(c: Cluster, topic: str, meta: dict[int, _core.PartitionMetadata]) -> None:
    out = describe(c, topic)
    for p, m in meta.items():
        replicas = ",".join(map(str, m.replicas))
        isr = ",".join(map(str, m.isr))
        assert f"Partition: {p}\tLeader: {m.leader}\tReplicas: {replicas}\tIsr: {isr}" in out, out


def test_elect_leaders_preferred_and_unclean(cluster: Cluster) -> None:
    c = cluster
    create(c.bootstrap_servers, "elect", 3, 3)
    before = settled([b.bootstrap_servers for b in c.brokers], "elect", 3)
    reps = {p: list(m.replicas) for p, m in before.items()}
    for p in (0, 1):
        set_state(c, "elect", p, reps[p][1], reps[p])
    everywhere(c, "elect", lambda v: all(v[p].leader == reps[p][1] for p in (0, 1)))

    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    asked = [TopicPartition("elect", p) for p in (0, 1, 2)]
    result = admin.elect_leaders(ElectionType.PREFERRED, asked).result(30)
    codes = {tp.partition: (e.code() if e is not None else 0) for tp, e in result.items()}
    assert codes == {0: 0, 1: 0, 2: _core.error_code("ELECTION_NOT_NEEDED")}
    after = everywhere(c, "elect", lambda v: all(v[p].leader == reps[p][0] for p in range(3)))
    for p in (0, 1):
        # Two writes: the simulated failover's, then the election's.
        assert after[p].leader_epoch == before[p].leader_epoch + 2

    # A preferred replica that is not alive (broker 9 does not exist) cannot lead.
    data, stat = c.zk.get(znodes.topic_path("elect"))
    tz = znodes.parse_topic_znode(data)
    tz.assignment[2] = [9, *reps[2]]
    c.zk.set(znodes.topic_path("elect"), tz.to_json(), version=stat.version)
    everywhere(c, "elect", lambda v: v[2].replicas[0] == 9)
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("elect", 2)]).result(30)
    (error,) = result.values()
    assert error is not None and error.code() == _core.error_code("PREFERRED_LEADER_NOT_AVAILABLE")
    # Back as it was: later elections over all partitions pass.
    data, stat = c.zk.get(znodes.topic_path("elect"))
    tz = znodes.parse_topic_znode(data)
    tz.assignment[2] = reps[2]
    c.zk.set(znodes.topic_path("elect"), tz.to_json(), version=stat.version)
    everywhere(c, "elect", lambda v: list(v[2].replicas) == reps[2])

    # A leaderless partition whose ISR is gone: only an unclean election gives it a leader.
    set_state(c, "elect", 1, -1, [42])
    time.sleep(1.0)
    assert partitions(c.brokers[0].bootstrap_servers, "elect")[1].leader == -1
    result = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition("elect", 1)]).result(30)
    assert list(result.values()) == [None]
    v = everywhere(c, "elect", lambda v: v[1].leader == reps[1][0])
    # The new leader alone, unless replication has already added followers back.
    assert v[1].isr[0] == reps[1][0] and 42 not in v[1].isr
    result = admin.elect_leaders(
        ElectionType.UNCLEAN, [TopicPartition("elect", 1), TopicPartition("elect", 7)]
    ).result(30)
    codes = {tp.partition: e.code() for tp, e in result.items()}
    assert codes == {
        1: _core.error_code("ELECTION_NOT_NEEDED"),
        7: _core.error_code("UNKNOWN_TOPIC_OR_PARTITION"),
    }

    # No live replica at all (brokers 8 and 9 do not exist): nobody can lead.
    def assign(replicas: list[int]) -> None:
        data, stat = c.zk.get(znodes.topic_path("elect"))
        tz = znodes.parse_topic_znode(data)
        tz.assignment[0] = replicas
        c.zk.set(znodes.topic_path("elect"), tz.to_json(), version=stat.version)

    assign([8, 9])
    set_state(c, "elect", 0, -1, [42])
    everywhere(c, "elect", lambda v: v[0].leader == -1)
    result = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition("elect", 0)]).result(30)
    (error,) = result.values()
    assert error is not None
    assert error.code() == _core.error_code("ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assign(reps[0])
    set_state(c, "elect", 0, reps[0][0], reps[0])
    everywhere(c, "elect", lambda v: v[0].leader == reps[0][0])


def test_kafka_leader_election_tool_over_all_partitions(cluster: Cluster) -> None:
    c = cluster
    create(c.bootstrap_servers, "javapref", 2, 2)
    meta = settled([b.bootstrap_servers for b in c.brokers], "javapref", 2)
    reps = list(meta[0].replicas)
    set_state(c, "javapref", 0, reps[1], reps)
    everywhere(c, "javapref", lambda v: v[0].leader == reps[1])
    out = _tool(
        "org.apache.kafka.tools.LeaderElectionCommand",
        "--bootstrap-server",
        c.brokers[1].bootstrap_servers,
        "--election-type",
        "preferred",
        "--all-topic-partitions",
    ).stdout
    assert "Successfully completed leader election (PREFERRED) for partitions" in out, out
    assert "javapref-0" in out
    assert "javapref-1" not in out, "a partition led by its preferred replica is left out"
    after = everywhere(c, "javapref", lambda v: v[0].leader == reps[0])
    assert_described(c, "javapref", after)


def _reassign(  # type: ignore[no-untyped-def]
    c: Cluster,
    tmp_path: Path,
    action: str,
    moves: dict[tuple[str, int], list[int]],
    *extra: str,
    via: str | None = None,
):
    plan = tmp_path / f"{action}.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                    for (t, p), r in moves.items()
                ],
            }
        )
    )
    return _tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server",
        via or c.brokers[2].bootstrap_servers,
        f"--{action}",
        "--reassignment-json-file",
        str(plan),
        *extra,
        check=False,
    )


def test_kafka_reassign_partitions_execute_verify_list_cancel(
    cluster: Cluster, tmp_path: Path
) -> None:
    c = cluster
    create(c.bootstrap_servers, "moving", 2, 2)
    meta = settled([b.bootstrap_servers for b in c.brokers], "moving", 2)
    produce(c.bootstrap_servers, "moving", {0: [b"a", b"b"], 1: [b"c"]})
    old = list(meta[0].replicas)
    spare = next(b.broker_id for b in c.brokers if b.broker_id not in old)
    # The leader (first replica) leaves: the new leader comes from the target.
    target = [old[1], spare]
    done = _reassign(c, tmp_path, "execute", {("moving", 0): target})
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert "Successfully started partition reassignment" in done.stdout, done.stdout

    def verified() -> bool:
        done = _reassign(c, tmp_path, "verify", {("moving", 0): target})
        if "Reassignment of partition moving-0 is completed." not in done.stdout:
            return False
        # Complete, the tool also clears throttles through IncrementalAlterConfigs.
        assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
        assert "Clearing topic-level throttles on topic moving" in done.stdout
        return True

    wait_for(verified, 60, 1.0)
    after = everywhere(
        c, "moving", lambda v: list(v[0].replicas) == target and v[0].leader == target[0]
    )
    assert sorted(after[0].isr) == sorted(target)
    assert after[0].leader_epoch > meta[0].leader_epoch
    assert_described(c, "moving", after)

    # An ongoing reassignment (its new replica, broker 9, never joins): listed, then
    # cancelled back to the original replicas.
    ors = list(meta[1].replicas)
    data, stat = c.zk.get(znodes.topic_path("moving"))
    tz = znodes.parse_topic_znode(data)
    tz.assignment[1] = [*ors, 9]
    tz.adding[1] = [9]
    c.zk.set(znodes.topic_path("moving"), tz.to_json(), version=stat.version)
    listed = _tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server",
        c.brokers[0].bootstrap_servers,
        "--list",
    ).stdout
    assert f"moving-1: replicas: {','.join(map(str, [*ors, 9]))}. adding: 9." in listed, listed
    # Throttles are kept: clearing them would address broker 9, which does not exist.
    done = _reassign(c, tmp_path, "cancel", {("moving", 1): [*ors, 9]}, "--preserve-throttles")
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert "Successfully cancelled partition reassignment" in done.stdout, done.stdout
    after = everywhere(c, "moving", lambda v: list(v[1].replicas) == ors)
    assert_described(c, "moving", after)
    assert znodes.parse_topic_znode(c.zk.get(znodes.topic_path("moving"))[0]).adding == {}


def test_a_new_controller_carries_on_an_ongoing_reassignment(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The reassignment lives in ZooKeeper: the next controller finishes or cancels it."""
    c = cluster
    create(c.bootstrap_servers, "carried", 1, 2)
    meta = settled([b.bootstrap_servers for b in c.brokers], "carried", 1)
    ors = list(meta[0].replicas)
    data, stat = c.zk.get(znodes.topic_path("carried"))
    tz = znodes.parse_topic_znode(data)
    tz.assignment[0] = [*ors, 9]
    tz.adding[0] = [9]
    c.zk.set(znodes.topic_path("carried"), tz.to_json(), version=stat.version)
    everywhere(c, "carried", lambda v: list(v[0].replicas) == [*ors, 9])
    old = c.controller_id()
    c.brokers[old - 1].stop()
    wait_for(lambda: c.controller_id() not in (-1, old), 30)
    survivors = [b for b in c.brokers if b.broker_id != old]
    try:
        # Through a surviving broker: the stopped one may be the tool's usual bootstrap.
        done = _reassign(
            c,
            tmp_path,
            "cancel",
            {("carried", 0): [*ors, 9]},
            "--preserve-throttles",
            via=survivors[0].bootstrap_servers,
        )
        assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
        wait_for(
            lambda: all(
                (m := partitions(b.bootstrap_servers, "carried").get(0)) is not None
                and list(m.replicas) == ors
                for b in survivors
            ),
            20,
        )
    finally:
        c.brokers[old - 1].restart()
    everywhere(c, "carried", lambda v: list(v[0].replicas) == ors)


def test_kafka_log_dirs_lists_every_hosted_replica(cluster: Cluster) -> None:
    c = cluster
    create(c.bootstrap_servers, "dirs", 3, 2)
    meta = settled([b.bootstrap_servers for b in c.brokers], "dirs", 3)
    produce(c.bootstrap_servers, "dirs", {p: [b"x" * 100] * 5 for p in range(3)})
    out = _tool(
        "org.apache.kafka.tools.LogDirsCommand",
        "--bootstrap-server",
        c.brokers[0].bootstrap_servers,
        "--describe",
        "--topic-list",
        "dirs",
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    by_broker = {b["broker"]: b["logDirs"] for b in report["brokers"]}
    assert set(by_broker) == {b.broker_id for b in c.brokers}
    for broker, dirs in by_broker.items():
        assert len(dirs) == 1 and dirs[0]["error"] is None
        hosted = {e["partition"]: e for e in dirs[0]["partitions"]}
        expected = {f"dirs-{p}" for p, m in meta.items() if broker in m.replicas}
        assert set(hosted) == expected, (broker, hosted)
        for p, m in meta.items():
            if m.leader == broker:
                assert hosted[f"dirs-{p}"]["size"] > 500
                assert hosted[f"dirs-{p}"]["offsetLag"] == 0


def test_producer_ids_come_from_cluster_wide_blocks(cluster: Cluster) -> None:
    c = cluster
    ids = []
    for b in c.brokers:
        with _core.KafkaClient(b.bootstrap_servers) as client:
            ids.extend(client.init_producer_id()[0] for _ in range(2))
    assert len(set(ids)) == len(ids), ids
    data, _ = c.zk.get(znodes.PRODUCER_ID_BLOCK)
    block = json.loads(data)
    assert set(block) == {"version", "broker", "block_start", "block_end"}
    first, last = znodes.parse_producer_id_block(data)
    assert last - first + 1 == 1000
    assert max(ids) <= last
    # Each broker's ids sit in its own block of 1000.
    assert len({i // 1000 for i in ids}) == len(c.brokers)


def test_inter_broker_listener_is_registered_and_checked(cluster: Cluster, tmp_path: Path) -> None:
    c = cluster
    client_port, internal_port = free_port(), free_port()
    common = (
        f"zookeeper.connect={c.zookeeper_connect}",
        f"listeners=PLAINTEXT://127.0.0.1:{client_port},INTERNAL://127.0.0.1:{internal_port}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    )
    bad = subprocess.run(
        _broker_cmd(
            "broker.id=5",
            *common,
            "inter.broker.listener.name=REPLICATION",
            f"log.dirs={tmp_path / 'bad'}",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # A config error (exit 2) naming the key, the value and the listeners there are.
    assert bad.returncode == 2, bad.stderr
    assert "inter.broker.listener.name" in bad.stderr, bad.stderr
    assert "REPLICATION" in bad.stderr and "PLAINTEXT, INTERNAL" in bad.stderr, bad.stderr
    assert c.zk.exists(znodes.broker_path(5)) is None
    # A fourth broker, last in this module (the others count three brokers).
    proc = subprocess.Popen(
        _broker_cmd(
            "broker.id=4",
            *common,
            "inter.broker.listener.name=INTERNAL",
            f"log.dirs={tmp_path / 'good'}",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: c.zk.exists(znodes.broker_path(4)) is not None, 30)
        data, _ = c.zk.get(znodes.broker_path(4))
        assert json.loads(data)["endpoints"] == [
            f"PLAINTEXT://127.0.0.1:{client_port}",
            f"INTERNAL://127.0.0.1:{internal_port}",
        ]
        assert znodes.endpoint(data, "INTERNAL") == ("127.0.0.1", internal_port)
        # Clients are given the client listener.
        assert znodes.parse_broker(4, data).port == client_port
    finally:
        proc.terminate()
        proc.wait(30)
    wait_for(lambda: c.zk.exists(znodes.broker_path(4)) is None, 30)


def test_auto_leader_rebalance_moves_leaders_back(tmp_path: Path) -> None:
    with Cluster(
        brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": 6000,
            "leader.imbalance.check.interval.seconds": 1,
            "leader.imbalance.per.broker.percentage": 10,
        },
        data_dir=tmp_path / "rebalance",
    ) as c:
        create(c.bootstrap_servers, "skew", 3, 3)
        meta = settled([b.bootstrap_servers for b in c.brokers], "skew", 3)
        reps = list(meta[0].replicas)
        set_state(c, "skew", 0, reps[1], reps)
        # The first check comes 5 s after the controller took office, then every second.
        # Moved away (epoch + 1), then back (epoch + 2) by the controller alone.
        everywhere(
            c,
            "skew",
            lambda v: v[0].leader == reps[0] and v[0].leader_epoch == meta[0].leader_epoch + 2,
        )
