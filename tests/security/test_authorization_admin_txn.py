"""The rest of the deny matrix (test_authorization.py has the rest): the cluster admin,
transaction and KIP-848 APIs. For each, a principal without the ACL Kafka checks is
refused with Kafka's error by a real client -- Kafka's own tools where one sends the API,
confluent-kafka's transactional producer and KIP-848 consumer, and raw requests (over
PLAINTEXT, as User:ANONYMOUS, who has no ACLs either) where no client sends it -- and the
same call works once `kafkalite acl` grants the ACL. The refusals' every field is
compared with Kafka 4.1.1's by the conformance runner's `*_authz` scripts."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.admin import DescribeTransactionsRequest, DescribeTransactionsResponse
from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from kafkalite.cli import main as kafkalite_cli
from tests.broker import rawproto
from tests.security.conftest import plain_jaas

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
ALICE = "User:alice"
ANONYMOUS = "User:ANONYMOUS"
NODE_ID = 1

# Kafka's error codes the refusals use.
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_PRODUCER_ID_MAPPING = 49
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TRANSACTIONAL_ID_NOT_FOUND = 105


@dataclass
class Secured:
    broker: Broker
    directory: Path

    def address(self, listener: str) -> str:
        return next(f"{h}:{p}" for n, h, p in self.broker.addresses if n == listener)

    @property
    def sasl(self) -> str:
        return self.address("SASL_PLAINTEXT")

    @property
    def plain(self) -> str:
        """The PLAINTEXT listener, where clients are User:ANONYMOUS (no ACLs)."""
        return self.address("PLAINTEXT")

    def conf(self, user: str) -> dict[str, str]:
        return {
            "bootstrap.servers": self.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
        }

    def properties(self, user: str) -> Path:
        """Client properties for Kafka's tools and `kafkalite --command-config`."""
        path = self.directory / f"{user}.properties"
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="{user}" password="{USERS[user]}";\n'
        )
        return path

    def grant(self, principal: str, operation: str, *resource: str) -> None:
        """`kafkalite acl add`, as the super user."""
        argv = ["acl", "add", "--allow-principal", principal, "--operation", operation]
        argv += [*resource, "-b", self.sasl, "--command-config", str(self.properties("admin"))]
        assert kafkalite_cli(argv) == 0, argv

    def tool(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        """One of Kafka's tools (the caller names alice's client properties)."""
        argv = ["--bootstrap-server", self.sasl, *args]
        cmd = kafka_ref.tool_command(kafka_ref.ensure_jars(), main_class, argv)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "node.id": NODE_ID,
        "num.partitions": 1,
        # KIP-848 members hear of a new assignment at their next heartbeat.
        "group.consumer.min.heartbeat.interval.ms": 500,
        "group.consumer.heartbeat.interval.ms": 500,
    }
    directory = tmp_path_factory.mktemp("authz-admin-txn")
    with Broker(log_dirs=directory / "data", config=config) as broker:
        yield Secured(broker, directory)


@pytest.fixture
def s(secured: Secured) -> Iterator[Secured]:
    """The broker; alice's and ANONYMOUS's ACLs are gone after each test."""
    yield secured
    admin = AdminClient(secured.conf("admin"))
    filters = [
        AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            principal,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        for principal in (ALICE, ANONYMOUS)
    ]
    for f in admin.delete_acls(filters).values():
        f.result(timeout=20)


def output(done: subprocess.CompletedProcess[str]) -> str:
    """What a tool printed, errors included."""
    return done.stdout + done.stderr


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def make_topic(s: Secured, topic: str) -> None:
    admin = AdminClient(s.conf("admin"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)


def produce(s: Secured, topic: str, count: int = 1) -> None:
    p = Producer(s.conf("admin"))
    for i in range(count):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(20) == 0


def raw(s: Secured, request: Any, response_class: Any, version: int) -> Any:
    """A request as User:ANONYMOUS, decoded field by field."""
    return rawproto.exchange(s.plain, request, response_class, version)


def test_leader_election_needs_alter_on_the_cluster(s: Secured) -> None:
    topic = name("elect")
    make_topic(s, topic)
    alice = str(s.properties("alice"))
    args = ["--admin.config", alice, "--election-type", "preferred"]
    args += ["--topic", topic, "--partition", "0"]
    denied = s.tool("org.apache.kafka.tools.LeaderElectionCommand", *args)
    assert denied.returncode != 0
    assert "Not authorized to perform leader election" in output(denied), output(denied)
    s.grant(ALICE, "Alter", "--cluster")
    done = s.tool("org.apache.kafka.tools.LeaderElectionCommand", *args)
    # A single node leads every partition already: nothing needed electing.
    assert done.returncode == 0, output(done)
    assert f"Valid replica already elected for partitions {topic}-0" in done.stdout


REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def test_listing_reassignments_needs_describe_on_the_cluster(s: Secured) -> None:
    alice = ["--command-config", str(s.properties("alice"))]
    denied = s.tool(REASSIGN, *alice, "--list")
    assert denied.returncode != 0
    assert "ClusterAuthorizationException" in output(denied), output(denied)
    assert "needs DESCRIBE permission" in output(denied)
    s.grant(ALICE, "Describe", "--cluster")
    listed = s.tool(REASSIGN, *alice, "--list")
    assert listed.returncode == 0, output(listed)
    assert "No partition reassignments found." in listed.stdout


def test_reassigning_needs_alter_on_the_cluster(s: Secured) -> None:
    topic = name("reassign")
    make_topic(s, topic)
    # --execute first reads the assignment (DESCRIBE on the topic) and the reassignments
    # in progress (DESCRIBE on the cluster), then reassigns (ALTER).
    s.grant(ALICE, "Describe", "--topic", topic)
    s.grant(ALICE, "Describe", "--cluster")
    plan = s.directory / f"{topic}.json"
    moves = [{"topic": topic, "partition": 0, "replicas": [NODE_ID]}]
    plan.write_text(json.dumps({"version": 1, "partitions": moves}))
    execute = ["--command-config", str(s.properties("alice"))]
    execute += ["--execute", "--reassignment-json-file", str(plan)]
    refused = s.tool(REASSIGN, *execute)
    assert refused.returncode != 0
    assert "needs ALTER permission" in output(refused), output(refused)
    s.grant(ALICE, "Alter", "--cluster")
    done = s.tool(REASSIGN, *execute)
    assert done.returncode == 0, output(done)
    assert f"Successfully started partition reassignment for {topic}-0" in done.stdout


def test_delete_records_needs_delete_on_the_topic(s: Secured) -> None:
    topic = name("delrec")
    make_topic(s, topic)
    produce(s, topic, 3)
    # DESCRIBE lets the tool find the partition's leader; deleting needs DELETE.
    s.grant(ALICE, "Describe", "--topic", topic)
    offsets = s.directory / f"{topic}.json"
    offsets.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 2}]})
    )
    args = ["--command-config", str(s.properties("alice")), "--offset-json-file", str(offsets)]
    denied = s.tool("org.apache.kafka.tools.DeleteRecordsCommand", *args)
    assert (
        f"partition: {topic}-0\terror: org.apache.kafka.common.errors.TopicAuthorizationException"
        in (output(denied))
    ), output(denied)
    s.grant(ALICE, "Delete", "--topic", topic)
    done = s.tool("org.apache.kafka.tools.DeleteRecordsCommand", *args)
    assert f"partition: {topic}-0\tlow_watermark: 2" in done.stdout, done.stdout


@pytest.fixture(scope="module")
def ongoing(secured: Secured) -> Iterator[tuple[str, str]]:
    """(transactional id, topic) of a transaction the super user keeps open."""
    topic, txn = name("txn-topic"), name("txn")
    make_topic(secured, topic)
    p = Producer({**secured.conf("admin"), "transactional.id": txn})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open")
    assert p.flush(20) == 0
    yield txn, topic
    p.abort_transaction(30)


def transactions_tool(s: Secured, *args: str) -> subprocess.CompletedProcess[str]:
    alice = ["--command-config", str(s.properties("alice"))]
    return s.tool("org.apache.kafka.tools.TransactionsCommand", *alice, *args)


def test_describe_transactions_needs_describe_on_the_id_and_its_topics(
    s: Secured, ongoing: tuple[str, str]
) -> None:
    txn, topic = ongoing
    denied = transactions_tool(s, "describe", "--transactional-id", txn)
    assert denied.returncode != 0
    # The tool finds the id's coordinator first, which needs the same DESCRIBE (the
    # DescribeTransactions refusal itself: the raw test_transaction_requests_need_...).
    assert "failed due to authorization failure" in output(denied), output(denied)
    s.grant(ALICE, "Describe", "--transactional-id", txn)
    shown = transactions_tool(s, "describe", "--transactional-id", txn)
    assert shown.returncode == 0, output(shown)
    row = shown.stdout.strip().splitlines()[-1]
    assert txn in row and "Ongoing" in row
    # The partitions column lists only the topics alice may DESCRIBE: none yet.
    assert topic not in row
    s.grant(ALICE, "Describe", "--topic", topic)
    shown = transactions_tool(s, "describe", "--transactional-id", txn)
    assert f"{topic}-0" in shown.stdout, shown.stdout


def test_list_transactions_shows_only_describable_ids(s: Secured, ongoing: tuple[str, str]) -> None:
    txn, _topic = ongoing
    listed = transactions_tool(s, "list")
    assert listed.returncode == 0, output(listed)
    assert txn not in output(listed)
    s.grant(ALICE, "Describe", "--transactional-id", txn)
    listed = transactions_tool(s, "list")
    rows = [line for line in output(listed).splitlines() if line.startswith(txn)]
    assert len(rows) == 1 and "Ongoing" in rows[0], output(listed)


def test_describe_producers_needs_read_on_the_topic(s: Secured, ongoing: tuple[str, str]) -> None:
    _txn, topic = ongoing
    # DESCRIBE lets the tool find the partition's leader; its producers need READ.
    s.grant(ALICE, "Describe", "--topic", topic)
    args = ["describe-producers", "--topic", topic, "--partition", "0"]
    denied = transactions_tool(s, *args)
    assert denied.returncode != 0
    refusal = f"Failed to describe active producers for partition {topic}-0 due to authorization"
    assert refusal in output(denied), output(denied)
    s.grant(ALICE, "Read", "--topic", topic)
    shown = transactions_tool(s, *args)
    assert shown.returncode == 0, output(shown)
    # The open transaction's producer, with where its transaction began.
    assert "ProducerId" in shown.stdout and "CurrentTransactionStartOffset" in shown.stdout
    assert len(shown.stdout.strip().splitlines()) >= 2


def send_offsets(
    p: Producer, conf: dict[str, str], group: str, topic: str, offset: int
) -> KafkaError | None:
    """Offsets of `group` in the open transaction: None, or the error it failed with."""
    c = Consumer({**conf, "group.id": group})
    try:
        p.send_offsets_to_transaction(
            [TopicPartition(topic, 0, offset)], c.consumer_group_metadata(), 20
        )
    except KafkaException as e:
        return e.args[0]
    finally:
        c.close()
    return None


def test_transactional_producer_needs_group_read_and_read_on_its_offsets_topics(
    s: Secured,
) -> None:
    """AddOffsetsToTxn needs READ on the group, TxnOffsetCommit READ on each topic too
    (the transactional id's WRITE lets the producer start at all)."""
    source, sink = name("src"), name("sink")
    txn, group = name("tx-alice"), name("tx-group")
    for t in (source, sink):
        make_topic(s, t)
    s.grant(ALICE, "Write", "--transactional-id", txn)
    s.grant(ALICE, "Write", "--topic", sink)
    p = Producer({**s.conf("alice"), "transactional.id": txn})
    p.init_transactions(30)

    def attempt() -> KafkaError | None:
        p.begin_transaction()
        p.produce(sink, b"out")
        assert p.flush(20) == 0
        err = send_offsets(p, s.conf("alice"), group, source, 7)
        if err is not None:
            p.abort_transaction(30)
        return err

    err = attempt()
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, err
    s.grant(ALICE, "Read", "--group", group)
    err = attempt()
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    s.grant(ALICE, "Read", "--topic", source)
    assert attempt() is None
    p.commit_transaction(30)
    admin = AdminClient(s.conf("admin"))
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(source, 0)])]
    committed = admin.list_consumer_group_offsets(request)[group].result(timeout=20)
    assert [tp.offset for tp in committed.topic_partitions] == [7]


def test_transaction_requests_need_write_on_the_transactional_id(s: Secured) -> None:
    """Raw DescribeTransactions, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
    TxnOffsetCommit as ANONYMOUS: refused for the transactional id before anything else is
    looked at; once it may WRITE the id, each gets as far as its next check."""
    topic, txn, group = name("raw-txn-topic"), name("raw-txn"), name("raw-group")
    make_topic(s, topic)
    producer = {"transactional_id": txn, "producer_id": 4242, "producer_epoch": 0}

    def add_partitions() -> list[int]:
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn,
            v3_and_below_producer_id=4242,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])
            ],
        )
        r = raw(s, request, AddPartitionsToTxnResponse, 3)
        return [
            p.partition_error_code
            for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition
        ]

    def add_offsets() -> int:
        r = raw(s, AddOffsetsToTxnRequest(**producer, group_id=group), AddOffsetsToTxnResponse, 3)
        return int(r.error_code)

    def end() -> int:
        r = raw(s, EndTxnRequest(**producer, committed=True), EndTxnResponse, 3)
        return int(r.error_code)

    def commit_offsets() -> list[int]:
        request = TxnOffsetCommitRequest(
            **producer,
            group_id=group,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=1,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        )
        r = raw(s, request, TxnOffsetCommitResponse, 3)
        return [p.error_code for t in r.topics for p in t.partitions]

    def describe() -> int:
        request = DescribeTransactionsRequest(transactional_ids=[txn])
        r = raw(s, request, DescribeTransactionsResponse, 0)
        return int(r.transaction_states[0].error_code)

    denied = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert describe() == denied
    assert add_partitions() == [denied]
    assert add_offsets() == denied
    assert end() == denied
    assert commit_offsets() == [denied]
    # The brokers' batched form (v4+) needs CLUSTER_ACTION instead.
    batch = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                transactional_id=txn,
                producer_id=4242,
                producer_epoch=0,
                verify_only=True,
                topics=[
                    AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction.AddPartitionsToTxnTopic(
                        name=topic, partitions=[0]
                    )
                ],
            )
        ]
    )
    assert raw(s, batch, AddPartitionsToTxnResponse, 4).error_code == CLUSTER_AUTHORIZATION_FAILED

    s.grant(ANONYMOUS, "Write", "--transactional-id", txn)
    # WRITE implies DESCRIBE: the id is described (never initialised: not found).
    assert describe() == TRANSACTIONAL_ID_NOT_FOUND
    # Next: WRITE on the topic, READ on the group, then the producer id itself.
    assert add_partitions() == [TOPIC_AUTHORIZATION_FAILED]
    assert add_offsets() == GROUP_AUTHORIZATION_FAILED
    assert commit_offsets() == [GROUP_AUTHORIZATION_FAILED]
    assert end() == INVALID_PRODUCER_ID_MAPPING
    s.grant(ANONYMOUS, "Write", "--topic", topic)
    s.grant(ANONYMOUS, "Read", "--group", group)
    assert add_partitions() == [INVALID_PRODUCER_ID_MAPPING]
    assert add_offsets() == INVALID_PRODUCER_ID_MAPPING


def test_broker_requests_need_cluster_action(s: Secured) -> None:
    """WriteTxnMarkers (a transaction coordinator's) and OffsetForLeaderEpoch (a
    follower's, or a KIP-320 consumer's with DESCRIBE on the topic), raw as ANONYMOUS."""
    seen, hidden = name("ofle-seen"), name("ofle-hidden")
    for t in (seen, hidden):
        make_topic(s, t)
        produce(s, t)

    def markers() -> list[int]:
        marker = WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=777,
            producer_epoch=0,
            transaction_result=False,
            topics=[
                WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(
                    name=seen, partition_indexes=[0]
                )
            ],
            coordinator_epoch=0,
        )
        r = raw(s, WriteTxnMarkersRequest(markers=[marker]), WriteTxnMarkersResponse, 1)
        return [p.error_code for m in r.markers for t in m.topics for p in t.partitions]

    def epochs(replica_id: int) -> dict[str, tuple[int, int]]:
        topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
        partition = topic.OffsetForLeaderPartition(
            partition=0, current_leader_epoch=-1, leader_epoch=0
        )
        request = OffsetForLeaderEpochRequest(
            replica_id=replica_id,
            topics=[topic(topic=t, partitions=[partition]) for t in (seen, hidden)],
        )
        r = raw(s, request, OffsetForLeaderEpochResponse, 4)
        return {t.topic: (t.partitions[0].error_code, t.partitions[0].end_offset) for t in r.topics}

    assert markers() == [CLUSTER_AUTHORIZATION_FAILED]
    refused = (TOPIC_AUTHORIZATION_FAILED, -1)
    assert epochs(-1) == {seen: refused, hidden: refused}
    assert epochs(1) == {seen: refused, hidden: refused}, "a follower needs CLUSTER_ACTION"
    s.grant(ANONYMOUS, "Describe", "--topic", seen)
    assert epochs(-1) == {seen: (0, 1), hidden: refused}
    s.grant(ANONYMOUS, "ClusterAction", "--cluster")
    assert epochs(1) == {seen: (0, 1), hidden: (0, 1)}
    assert markers() == [0]


def kip848_consumer(s: Secured, group: str) -> Consumer:
    return Consumer(
        {
            **s.conf("alice"),
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )


def first_error(c: Consumer, seconds: float = 15) -> KafkaError | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        msg = c.poll(0.3)
        if msg is not None and msg.error():
            return msg.error()
    return None


def test_kip848_consumer_needs_describe_on_its_topics(s: Secured) -> None:
    topic, group = name("cgh"), name("cgh-group")
    make_topic(s, topic)
    produce(s, topic)
    s.grant(ALICE, "Read", "--group", group)
    c = kip848_consumer(s, group)
    c.subscribe([topic])
    try:
        err = first_error(c)
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
        # Refused at the heartbeat, not only in Metadata: the group never took it in.
        admin = AdminClient(s.conf("admin"))
        described = admin.describe_consumer_groups([group])[group].result(timeout=20)
        assert described.members == []
    finally:
        c.close()
    s.grant(ALICE, "Read", "--topic", topic)  # implies DESCRIBE
    c = kip848_consumer(s, group)
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        value = None
        while value is None and time.monotonic() < deadline:
            msg = c.poll(0.3)
            if msg is not None and not msg.error():
                value = msg.value()
        assert value == b"v0"
    finally:
        c.close()


def test_kip848_regex_matches_only_describable_topics(s: Secured) -> None:
    prefix = name("rx")
    seen, hidden, group = f"{prefix}-seen", f"{prefix}-hidden", name("rx-group")
    for t in (seen, hidden):
        make_topic(s, t)
        produce(s, t)
    s.grant(ALICE, "Read", "--group", group)
    s.grant(ALICE, "Read", "--topic", seen)
    c = kip848_consumer(s, group)
    c.subscribe([f"^{prefix}-.*"])
    try:
        got: set[str] = set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not got:
            msg = c.poll(0.3)
            if msg is not None and not msg.error():
                got.add(msg.topic())
        # A few more heartbeats: the regex never reaches the topic alice cannot see.
        end = time.monotonic() + 2
        while time.monotonic() < end:
            msg = c.poll(0.3)
            if msg is not None and not msg.error():
                got.add(msg.topic())
        assert got == {seen}
        assert {tp.topic for tp in c.assignment()} == {seen}
    finally:
        c.close()


def test_consumer_group_describe_hides_a_group_holding_undescribable_topics(
    s: Secured,
) -> None:
    topic, group = name("cgd"), name("cgd-group")
    make_topic(s, topic)
    produce(s, topic)
    admin_member = Consumer(
        {
            **s.conf("admin"),
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    admin_member.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while not admin_member.assignment() and time.monotonic() < deadline:
            admin_member.poll(0.3)
        assert admin_member.assignment()
        describe = ["--command-config", str(s.properties("alice"))]
        describe += ["--describe", "--group", group, "--members"]
        tool = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
        s.grant(ALICE, "Describe", "--group", group)
        hidden = s.tool(tool, *describe)
        assert "TopicAuthorizationException" in output(hidden), output(hidden)
        assert "not authorized to describe" in output(hidden)
        s.grant(ALICE, "Describe", "--topic", topic)
        shown = s.tool(tool, *describe)
        assert shown.returncode == 0, output(shown)
        assert len([line for line in shown.stdout.splitlines() if line.startswith(group)]) == 1
    finally:
        admin_member.close()
