"""What tools see of a group: the Admin client's list and describe (state, members, their
client id and host, and the assignment the leader made), and deleting an empty group."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from kafkalite import Broker
from tests.groups.members import Member, create_topic, split_evenly, wait_for


def test_list_describe_and_delete_with_the_admin_client(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, "watched")
    admin = AdminClient({"bootstrap.servers": bs})
    members = [Member(bs, "watched", "observed", "confluent") for _ in range(2)]
    try:
        wait_for(lambda: split_evenly(members), 30, "a stable group of two")
        listed = admin.list_consumer_groups().result(10)
        states = {g.group_id: g.state for g in listed.valid}
        assert states["observed"] == ConsumerGroupState.STABLE
        desc = admin.describe_consumer_groups(["observed"])["observed"].result(10)
        assert desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor == "range"
        assert len(desc.members) == 2
        assigned = set()
        for m in desc.members:
            assert m.client_id == "worker-confluent"
            assert m.host.lstrip("/") == "127.0.0.1"
            assigned |= {tp.partition for tp in m.assignment.topic_partitions}
        assert assigned == set(range(6))
        # A group with members cannot be deleted.
        assert admin.delete_consumer_groups(["observed"])["observed"].exception(10) is not None
    finally:
        for m in members:
            m.stop()
    desc = admin.describe_consumer_groups(["observed"])["observed"].result(10)
    assert desc.state == ConsumerGroupState.EMPTY
    assert admin.delete_consumer_groups(["observed"])["observed"].result(10) is None
    listed = admin.list_consumer_groups().result(10)
    assert "observed" not in {g.group_id for g in listed.valid}
