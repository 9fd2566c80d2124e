"""What `kafka-consumer-groups` users reach for, in `kafkalite group`: delete, --shift-by,
--all-topics, --export; a console consumer stopped with SIGTERM leaves its group at once;
--to-offset past the log end warns. Separate processes against a running broker."""

from __future__ import annotations

import signal
import subprocess
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker
from tests.groups.test_group_cli import KAFKALITE, cli, describe_until, table


def topic_with(broker: Broker, topic: str, per_partition: list[int]) -> None:
    """A topic whose partition i holds per_partition[i] records."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, len(per_partition), 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition, count in enumerate(per_partition):
        for i in range(count):
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def consume_all(broker: Broker, topic: str, group: str, count: int) -> None:
    done = cli(broker, "consume", topic, "-g", group, "--from-beginning", "-n", str(count))
    assert done.returncode == 0 and len(done.stdout.splitlines()) == count, done.stderr


def committed(broker: Broker, group: str) -> dict[tuple[str, str], str]:
    rows = table(cli(broker, "group", "describe", group).stdout)
    return {(r["TOPIC"], r["PARTITION"]): r["CURRENT-OFFSET"] for r in rows}


def group_state(broker: Broker, group: str) -> str | None:
    rows = table(cli(broker, "group", "list", "--state").stdout)
    return next((r["STATE"] for r in rows if r["GROUP"] == group), None)


def test_sigterm_leaves_the_group_at_once_and_delete_needs_an_empty_group(
    broker: Broker,
) -> None:
    topic_with(broker, "orders", [6, 4])
    consume = ["consume", "orders", "-g", "G", "--from-beginning", "--timeout", "0"]
    member = subprocess.Popen(
        [*KAFKALITE, *consume, "-b", broker.bootstrap_servers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        rows = describe_until(
            broker,
            "G",
            lambda rows: len(rows) == 2 and all(r["LAG"] == "0" for r in rows),
        )
        assert {r["CONSUMER-ID"] for r in rows} != {"-"}, rows
        refused = cli(broker, "group", "delete", "G")
        assert refused.returncode == 1
        assert "group G not deleted: it has active members" in refused.stderr, refused.stderr
        member.send_signal(signal.SIGTERM)
        out, err = member.communicate(timeout=20)
    finally:
        member.kill()
    assert member.returncode == 0, err
    assert sorted(out.splitlines()) == sorted(
        [f"0-{i}" for i in range(6)] + [f"1-{i}" for i in range(4)]
    )
    assert "Processed a total of 10 messages." in err
    # The member sent LeaveGroup: the group is Empty now, not Stable for a session
    # timeout (45 s), and its offsets can be reset and the group deleted at once.
    deadline = time.monotonic() + 5
    while group_state(broker, "G") != "Empty" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_state(broker, "G") == "Empty"
    reset = cli(
        broker, "group", "reset-offsets", "G", "--topic", "orders", "--to-earliest", "--execute"
    )
    assert reset.returncode == 0, reset.stderr
    assert set(committed(broker, "G").values()) == {"0"}

    deleted = cli(broker, "group", "delete", "G")
    assert deleted.returncode == 0, deleted.stderr
    assert "Deletion of requested consumer groups ('G') was successful." in deleted.stdout
    assert group_state(broker, "G") is None
    gone = cli(broker, "group", "describe", "G")
    assert gone.returncode == 1 and "G does not exist" in gone.stderr
    again = cli(broker, "group", "delete", "G", "nobody")
    assert again.returncode == 1
    assert "group G not deleted: it does not exist" in again.stderr
    assert "group nobody not deleted: it does not exist" in again.stderr
    assert "Traceback" not in again.stderr


def test_to_offset_outside_the_log_warns_and_moves_to_its_end(broker: Broker) -> None:
    topic_with(broker, "t", [10])
    consume_all(broker, "t", "W", 10)
    past = cli(broker, "group", "reset-offsets", "W", "--topic", "t", "--to-offset", "42")
    assert past.returncode == 0, past.stderr
    assert [r["NEW-OFFSET"] for r in table(past.stdout)] == ["10"]
    assert (
        "WARN: New offset (42) is higher than latest offset for topic partition t-0. "
        "Value will be set to 10" in past.stderr
    ), past.stderr
    inside = cli(broker, "group", "reset-offsets", "W", "--topic", "t", "--to-offset", "4")
    assert [r["NEW-OFFSET"] for r in table(inside.stdout)] == ["4"]
    assert "WARN" not in inside.stderr


def test_shift_by_moves_committed_offsets_and_clamps_with_a_warning(broker: Broker) -> None:
    topic_with(broker, "s", [5, 5])
    consume_all(broker, "s", "S", 10)
    assert committed(broker, "S") == {("s", "0"): "5", ("s", "1"): "5"}

    back = cli(broker, "group", "reset-offsets", "S", "--topic", "s", "--shift-by", "-2")
    assert back.returncode == 0, back.stderr
    assert [r["NEW-OFFSET"] for r in table(back.stdout)] == ["3", "3"]
    too_far = cli(broker, "group", "reset-offsets", "S", "--topic", "s:1", "--shift-by", "-9")
    assert [r["NEW-OFFSET"] for r in table(too_far.stdout)] == ["0"]
    assert "New offset (-4) is lower than earliest offset for topic partition s-1" in (
        too_far.stderr
    )
    applied = cli(
        broker, "group", "reset-offsets", "S", "--topic", "s:0", "--shift-by", "-2", "--execute"
    )
    assert applied.returncode == 0, applied.stderr
    assert committed(broker, "S") == {("s", "0"): "3", ("s", "1"): "5"}

    topic_with(broker, "other", [3])
    unknown = cli(broker, "group", "reset-offsets", "S", "--topic", "other", "--shift-by", "1")
    assert unknown.returncode == 1
    assert "cannot shift the offset of other-0: group S has no committed offset" in (unknown.stderr)


def test_all_topics_and_export_write_the_plan_as_kafka_csv(broker: Broker) -> None:
    topic_with(broker, "a", [4, 2])
    topic_with(broker, "b", [3])
    topic_with(broker, "untouched", [7])
    consume_all(broker, "a", "E", 6)
    consume_all(broker, "b", "E", 3)

    plan = cli(broker, "group", "reset-offsets", "E", "--all-topics", "--to-earliest", "--export")
    assert plan.returncode == 0, plan.stderr
    # Every partition E committed to, and only those; CSV as kafka-consumer-groups --export.
    assert plan.stdout.splitlines() == ["a,0,0", "a,1,0", "b,0,0"]
    assert "dry run" in plan.stderr
    assert committed(broker, "E")[("a", "0")] == "4"

    shifted = cli(
        broker,
        "group",
        "reset-offsets",
        "E",
        "--all-topics",
        "--shift-by",
        "-1",
        "--export",
        "--execute",
    )
    assert shifted.returncode == 0, shifted.stderr
    assert shifted.stdout.splitlines() == ["a,0,3", "a,1,1", "b,0,2"]
    assert committed(broker, "E") == {("a", "0"): "3", ("a", "1"): "1", ("b", "0"): "2"}

    nothing = cli(broker, "group", "reset-offsets", "never", "--all-topics", "--to-latest")
    assert nothing.returncode == 1
    assert "group never has no committed offsets" in nothing.stderr
    both = cli(broker, "group", "reset-offsets", "E", "--all-topics", "--topic", "a", "--to-latest")
    assert both.returncode == 2 and "not allowed with" in both.stderr
