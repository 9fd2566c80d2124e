"""Several log dirs on one broker (JBOD, issue 16): new partitions spread over the dirs,
`kafka-log-dirs` lists each dir's replicas, and `kafka-reassign-partitions` moves a replica
to another dir (AlterReplicaLogDirs) while a producer keeps writing: every acknowledged
record is there afterwards, also after a restart, and only the destination holds the data."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkalite import Broker

from .test_kafka_tools_admin import ok, tool

LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def create(boot: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def log_dirs_report(boot: str, topic: str) -> dict[str, dict[str, dict]]:
    """kafka-log-dirs --describe: log dir -> partition name -> entry."""
    out = ok(tool(LOG_DIRS, "--bootstrap-server", boot, "--describe", "--topic-list", topic))
    report = json.loads(out.strip().splitlines()[-1])
    (only,) = report["brokers"]
    return {d["logDir"]: {p["partition"]: p for p in d["partitions"]} for d in only["logDirs"]}


def read_all(boot: str, topic: str, partition: int, count: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": boot, "group.id": "jbod-check", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                assert m.error() is None, m.error()
                values.append(m.value())
        return values
    finally:
        c.close()


def test_partitions_spread_over_log_dirs_and_kafka_log_dirs_lists_them(tmp_path: Path) -> None:
    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    with Broker(log_dirs=dirs) as b:
        create(b.bootstrap_servers, "spread", 4)
        report = log_dirs_report(b.bootstrap_servers, "spread")
    # One filesystem: the dir holding fewer partitions takes the next one.
    assert sorted(report) == sorted(str(d) for d in dirs)
    assert [len(report[str(d)]) for d in dirs] == [2, 2]
    for d in dirs:
        assert {p.name for p in d.iterdir() if p.name.startswith("spread-")} == set(report[str(d)])


def test_kafka_reassign_partitions_moves_a_replica_to_another_dir_while_producing(
    tmp_path: Path,
) -> None:
    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    acked: list[bytes] = []
    with Broker(log_dirs=dirs, config={"log.segment.bytes": 256 * 1024, "num.partitions": 1}) as b:
        boot = b.bootstrap_servers
        create(boot, "moving", 1)
        report = log_dirs_report(boot, "moving")
        (source,) = [d for d in report if "moving-0" in report[d]]
        (dest,) = [str(d) for d in dirs if str(d) != source]

        # A producer writes all along, acks=all; what it was told is written must stay.
        stop = threading.Event()

        def produce() -> None:
            p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 2})

            def on_delivery(err: object, msg: object) -> None:
                if err is None:
                    acked.append(msg.value())  # type: ignore[attr-defined]

            i = 0
            while not stop.is_set() or i < 20_000:
                p.produce("moving", f"{i:08d}".encode() * 16, partition=0, on_delivery=on_delivery)
                p.poll(0)
                i += 1
                if i % 2000 == 0:
                    p.flush(30)
            p.flush(30)

        writer = threading.Thread(target=produce)
        writer.start()
        try:
            plan = tmp_path / "plan.json"
            plan.write_text(
                json.dumps(
                    {
                        "version": 1,
                        "partitions": [
                            {"topic": "moving", "partition": 0, "replicas": [1], "log_dirs": [dest]}
                        ],
                    }
                )
            )
            time.sleep(1)  # some data first, so the copy has segments to carry
            ok(tool(REASSIGN, "--bootstrap-server", boot, "--execute",
                    "--reassignment-json-file", str(plan)))  # fmt: skip
            deadline = time.monotonic() + 60
            while True:
                out = ok(tool(REASSIGN, "--bootstrap-server", boot, "--verify",
                              "--reassignment-json-file", str(plan)))  # fmt: skip
                if "Reassignment of replica moving-0-1 completed successfully" in out:
                    break
                assert time.monotonic() < deadline, out
                time.sleep(0.5)
        finally:
            stop.set()
            writer.join(120)
        assert not writer.is_alive()
        report = log_dirs_report(boot, "moving")
        assert "moving-0" in report[dest] and "moving-0" not in report[source], report
        assert not report[dest]["moving-0"]["isFuture"]
        assert (Path(dest) / "moving-0").is_dir() and not (Path(source) / "moving-0").exists()
        assert read_all(boot, "moving", 0, len(acked)) == acked

    # After a restart, from the destination dir, with every acknowledged record.
    with Broker(log_dirs=dirs) as b:
        assert read_all(b.bootstrap_servers, "moving", 0, len(acked)) == acked
        assert "moving-0" in log_dirs_report(b.bootstrap_servers, "moving")[dest]
    assert len(acked) >= 20_000


def test_alter_replica_log_dirs_refuses_a_dir_the_broker_does_not_have(tmp_path: Path) -> None:
    with Broker(log_dirs=[tmp_path / "only"]) as b:
        create(b.bootstrap_servers, "stays", 1)
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {
                            "topic": "stays",
                            "partition": 0,
                            "replicas": [1],
                            "log_dirs": [str(tmp_path / "elsewhere")],
                        }
                    ],
                }
            )
        )
        done = tool(REASSIGN, "--bootstrap-server", b.bootstrap_servers, "--execute",
                    "--reassignment-json-file", str(plan))  # fmt: skip
        assert done.returncode != 0
        assert "LogDirNotFoundException" in done.stdout + done.stderr, done.stdout + done.stderr


def test_reordering_log_dirs_keeps_topics_configs_and_cluster_id(tmp_path: Path) -> None:
    """The broker's own stores live in one log dir (the first, on a new broker); a restart
    with `log.dirs` in another order finds them there rather than starting empty."""
    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    with Broker(log_dirs=dirs) as b:
        boot = b.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic("kept", 2, 1, config={"retention.ms": "4242000"})])[
            "kept"
        ].result(30)
        p = Producer({"bootstrap.servers": boot, "acks": "all"})
        for i in range(20):
            p.produce("kept", str(i).encode(), partition=i % 2)
        assert p.flush(30) == 0
        cluster_id = admin.describe_cluster().result(30).cluster_id
    with Broker(log_dirs=list(reversed(dirs))) as b:
        boot = b.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": boot})
        assert admin.describe_cluster().result(30).cluster_id == cluster_id
        topics = admin.list_topics(timeout=30).topics
        assert "kept" in topics and len(topics["kept"].partitions) == 2
        (configs,) = admin.describe_configs([ConfigResource("topic", "kept")]).values()
        assert configs.result(30)["retention.ms"].value == "4242000"
        values = read_all(boot, "kept", 0, 10) + read_all(boot, "kept", 1, 10)
        assert sorted(int(v) for v in values) == list(range(20))
    assert not (dirs[1] / ".kafkalite").exists()
