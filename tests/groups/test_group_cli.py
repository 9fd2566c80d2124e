"""`kafkalite consume -g` and `kafkalite group list/describe/reset-offsets`, run as a user
would: separate processes against a running broker."""

from __future__ import annotations

import subprocess
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker

KAFKALITE = [sys.executable, "-m", "kafkalite.cli"]


def cli(broker: Broker, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KAFKALITE, *args, "-b", broker.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def table(stdout: str) -> list[dict[str, str]]:
    header, *rows = [line.split() for line in stdout.splitlines() if line.strip()]
    return [dict(zip(header, row, strict=True)) for row in rows]


def setup_topic(broker: Broker, topic: str, partitions: int, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(records):
        producer.produce(topic, key=str(i).encode(), value=str(i).encode())
    assert producer.flush(30) == 0


def describe_until(broker: Broker, group: str, ok, timeout: float = 30) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        done = cli(broker, "group", "describe", group)
        rows = table(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
        if ok(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def test_two_console_consumers_split_the_partitions_and_describe_shows_lag(
    broker: Broker,
) -> None:
    setup_topic(broker, "orders", 4, 400)
    consumers = [
        subprocess.Popen(
            [
                *KAFKALITE,
                "consume",
                "orders",
                "-g",
                "G",
                "--from-beginning",
                "--timeout",
                "0",
                "-b",
                broker.bootstrap_servers,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        # Both members own partitions, every partition has an owner, all of it consumed.
        rows = describe_until(
            broker,
            "G",
            lambda rows: (
                len(rows) == 4
                and len({r["CONSUMER-ID"] for r in rows} - {"-"}) == 2
                and all(r["LAG"] == "0" for r in rows)
            ),
        )
        assert len(rows) == 4, rows
        assert len({r["CONSUMER-ID"] for r in rows} - {"-"}) == 2, rows
        assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == 400, rows
        assert all(r["LAG"] == "0" and r["GROUP"] == "G" for r in rows), rows
        listed = cli(broker, "group", "list", "--state")
        assert {"GROUP": "G", "STATE": "Stable"} in table(listed.stdout)
        # Resetting a live group is refused, naming its state.
        refused = cli(
            broker, "group", "reset-offsets", "G", "--topic", "orders", "--to-earliest", "--execute"
        )
        assert refused.returncode == 1
        assert "inactive" in refused.stderr and "Stable" in refused.stderr
    finally:
        for c in consumers:
            c.terminate()
        outputs = [c.communicate(timeout=30) for c in consumers]
    # Each record printed once across the two processes.
    lines = [line for out, _ in outputs for line in out.decode().splitlines()]
    assert sorted(lines, key=int) == [str(i) for i in range(400)]

    # Lag appears as records arrive while nobody consumes.
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(40):
        producer.produce("orders", value=b"late", partition=i % 4)
    assert producer.flush(30) == 0
    rows = describe_until(broker, "G", lambda rows: all(r["CONSUMER-ID"] == "-" for r in rows))
    assert [r["LAG"] for r in rows] == ["10"] * 4, rows


def test_reset_offsets_is_a_dry_run_unless_executed(broker: Broker) -> None:
    setup_topic(broker, "events", 2, 100)
    consumed = cli(broker, "consume", "events", "-g", "R", "--from-beginning", "-n", "100")
    assert consumed.returncode == 0, consumed.stderr
    before = {
        r["PARTITION"]: r["CURRENT-OFFSET"]
        for r in table(cli(broker, "group", "describe", "R").stdout)
    }
    assert sum(map(int, before.values())) == 100

    plan = cli(broker, "group", "reset-offsets", "R", "--topic", "events", "--to-earliest")
    assert plan.returncode == 0, plan.stderr
    assert [r["NEW-OFFSET"] for r in table(plan.stdout)] == ["0", "0"]
    assert "dry run" in plan.stderr
    unchanged = table(cli(broker, "group", "describe", "R").stdout)
    assert {r["PARTITION"]: r["CURRENT-OFFSET"] for r in unchanged} == before

    done = cli(
        broker,
        "group",
        "reset-offsets",
        "R",
        "--topic",
        "events:1",
        "--to-offset",
        "5",
        "--execute",
    )
    assert done.returncode == 0, done.stderr
    after = {
        r["PARTITION"]: r["CURRENT-OFFSET"]
        for r in table(cli(broker, "group", "describe", "R").stdout)
    }
    assert after == {"0": before["0"], "1": "5"}

    # A member of R resumes from the reset offset: it reads partition 1 from 5 on.
    rest = int(before["1"]) - 5
    resumed = cli(broker, "consume", "events", "-g", "R", "-n", str(rest))
    assert resumed.returncode == 0, resumed.stderr
    assert len(resumed.stdout.splitlines()) == rest

    latest = cli(broker, "group", "reset-offsets", "R", "--topic", "events", "--to-latest")
    assert [r["NEW-OFFSET"] for r in table(latest.stdout)] == [before["0"], before["1"]]
    future = cli(
        broker,
        "group",
        "reset-offsets",
        "R",
        "--topic",
        "events",
        "--to-datetime",
        "2999-01-01T00:00:00.000",
    )
    assert [r["NEW-OFFSET"] for r in table(future.stdout)] == [before["0"], before["1"]]
    past = cli(
        broker,
        "group",
        "reset-offsets",
        "R",
        "--topic",
        "events",
        "--to-datetime",
        "2000-01-01T00:00:00.000",
    )
    assert [r["NEW-OFFSET"] for r in table(past.stdout)] == ["0", "0"]


def test_bad_group_commands_name_what_is_wrong(broker: Broker) -> None:
    setup_topic(broker, "t", 1, 1)
    missing = cli(broker, "group", "describe", "nobody")
    assert missing.returncode == 1
    assert "nobody does not exist" in missing.stderr
    bad_topic = cli(broker, "group", "reset-offsets", "nobody", "--topic", "nope", "--to-latest")
    assert bad_topic.returncode == 1 and "--topic nope" in bad_topic.stderr
    bad_time = cli(
        broker, "group", "reset-offsets", "nobody", "--topic", "t", "--to-datetime", "yesterday"
    )
    assert bad_time.returncode == 1 and "'yesterday'" in bad_time.stderr
    bad_partition = cli(broker, "group", "reset-offsets", "nobody", "--topic", "t:7", "--to-latest")
    assert bad_partition.returncode == 1 and "no partition 7" in bad_partition.stderr
    no_target = cli(broker, "group", "reset-offsets", "nobody", "--topic", "t")
    assert no_target.returncode == 2
    assert "Traceback" not in missing.stderr + bad_topic.stderr + bad_time.stderr
