"""controller_mutation_rate (KIP-599): a client id may create or delete so many partitions
per second. Past its bucket, CreateTopics (v6+), CreatePartitions (v3+) and DeleteTopics
(v5+) refuse with THROTTLING_QUOTA_EXCEEDED and a throttle time, as Kafka does; other
clients are not held. kafka-python negotiates the newest versions, so it sees the error."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

from kafkalite import Broker
from tests.quotas.conftest import kafka_configs

THROTTLING_QUOTA_EXCEEDED = 89
RATE = 1  # partitions per second: a bucket of 11 (11 one-second windows)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path_factory.mktemp("mutations")) as b:
        yield b


def admin(bootstrap: str, client_id: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)


def create(client: KafkaAdminClient, name: str, partitions: int) -> int:
    """The error code of creating one topic."""
    r = client.create_topics([NewTopic(name, partitions, 1)], raise_errors=False)
    return r["topics"][0]["error_code"]


def test_a_client_past_its_mutation_rate_is_refused_and_others_are_not(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    capped_id = f"capped-admin-{uuid.uuid4().hex[:6]}"
    kafka_configs(
        bootstrap,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        capped_id,
        "--add-config",
        f"controller_mutation_rate={RATE}",
    )
    names = [f"mutations-{i}-{uuid.uuid4().hex[:6]}" for i in range(4)]
    capped = admin(bootstrap, capped_id)
    free = admin(bootstrap, "free-admin")
    try:
        # 11 in the bucket: 10 leave 1, the next 10 are still taken (the bucket was not
        # empty) and leave it 9 below zero; then nothing more until it refills.
        assert create(capped, names[0], 10) == 0
        assert create(capped, names[1], 10) == 0
        assert create(capped, names[2], 1) == THROTTLING_QUOTA_EXCEEDED
        assert names[2] not in free.list_topics()

        # Every mutation is refused, from new connections too (a throttled one is muted,
        # and kafka-python pauses it), with the time the bucket needs to refill to zero.
        with_new = admin(bootstrap, capped_id)
        try:
            grown = with_new.create_partitions({names[1]: NewPartitions(12)}, raise_errors=False)
            assert grown.results[0].error_code == THROTTLING_QUOTA_EXCEEDED, grown
            assert 6_000 <= grown.throttle_time_ms <= 9_000, grown
        finally:
            with_new.close()
        with_new = admin(bootstrap, capped_id)
        try:
            deleted = with_new.delete_topics([names[0]], raise_errors=False)
            assert deleted["topics"][0]["error_code"] == THROTTLING_QUOTA_EXCEEDED, deleted
        finally:
            with_new.close()
        assert names[0] in free.list_topics()
        assert len(free.describe_topics([names[1]])[0]["partitions"]) == 10
        # Another client id is not held.
        assert create(free, names[2], 50) == 0

        # Validating only mutates nothing, so it is not refused.
        checker = admin(bootstrap, capped_id)
        try:
            new = [NewTopic(names[3], 3, 1)]
            r = checker.create_topics(new, validate_only=True, raise_errors=False)
            assert r["topics"][0]["error_code"] == 0, r
        finally:
            checker.close()
    finally:
        capped.close()
        free.close()
