"""The deny matrix: for each API the broker serves, a principal without the ACL Kafka
checks gets the right *_AUTHORIZATION_FAILED and nothing changes; with the ACL it
succeeds. ACLs are managed with CreateAcls/DescribeAcls/DeleteAcls from confluent-kafka's
AdminClient, as the super user."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kafkalite import Broker
from tests.security.conftest import plain_jaas

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
ALICE = "User:alice"


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "num.partitions": 1,
    }
    data: Path = tmp_path_factory.mktemp("authz")
    with Broker(log_dirs=data, config=config) as broker:
        yield broker.bootstrap_servers


def conf(bootstrap: str, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


class Acls:
    """Grants for alice, made and removed by the admin."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient(conf(bootstrap, "admin"))

    def grant(self, rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        binding = AclBinding(
            rtype, name, ResourcePatternType.LITERAL, ALICE, "*", op, AclPermissionType.ALLOW
        )
        for f in self.admin.create_acls([binding]).values():
            f.result(timeout=20)
        return binding

    def revoke_all(self) -> None:
        f = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            ALICE,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        for fut in self.admin.delete_acls([f]).values():
            fut.result(timeout=20)


@pytest.fixture
def acls(bootstrap: str) -> Iterator[Acls]:
    a = Acls(bootstrap)
    yield a
    a.revoke_all()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def make_topic(admin: AdminClient, topic: str, partitions: int = 1) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=20)


def error_code(exc: BaseException) -> int:
    assert isinstance(exc, KafkaException), exc
    return exc.args[0].code()


def produce(c: dict[str, str], topic: str) -> KafkaError | None:
    got: list[KafkaError | None] = []
    p = Producer({**c, "enable.idempotence": False, "retries": 0, "message.timeout.ms": 10000})
    p.produce(topic, b"v", on_delivery=lambda err, _m: got.append(err))
    p.flush(20)
    return got[0]


def end_offset(admin_conf: dict[str, str], topic: str) -> int:
    c = Consumer({**admin_conf, "group.id": "watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def test_produce_needs_write(bootstrap: str, acls: Acls) -> None:
    topic = name("produce")
    make_topic(acls.admin, topic)
    acls.grant(ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    err = produce(conf(bootstrap, "alice"), topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    assert end_offset(conf(bootstrap, "admin"), topic) == 0, "nothing was written"
    acls.grant(ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert produce(conf(bootstrap, "alice"), topic) is None
    assert end_offset(conf(bootstrap, "admin"), topic) == 1


def consume_one(c: dict[str, str], topic: str) -> KafkaError | bytes:
    consumer = Consumer({**c, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            # The consumer also looks for its group's coordinator (refused: no group ACL);
            # only the partition's answer matters here.
            if msg is None or (
                msg.error() and msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
            ):
                continue
            return msg.error() if msg.error() else msg.value()
        raise AssertionError("no answer")
    finally:
        consumer.close()


def test_fetch_needs_read(bootstrap: str, acls: Acls) -> None:
    topic = name("fetch")
    make_topic(acls.admin, topic)
    assert produce(conf(bootstrap, "admin"), topic) is None
    acls.grant(ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    err = consume_one(conf(bootstrap, "alice"), topic)
    assert isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    acls.grant(ResourceType.TOPIC, topic, AclOperation.READ)
    assert consume_one(conf(bootstrap, "alice"), topic) == b"v"


def test_metadata_hides_topics_without_describe(bootstrap: str, acls: Acls) -> None:
    topic = name("meta")
    make_topic(acls.admin, topic)
    alice = AdminClient(conf(bootstrap, "alice"))
    assert topic not in alice.list_topics(timeout=10).topics
    acls.grant(ResourceType.TOPIC, topic, AclOperation.READ)  # implies DESCRIBE
    assert topic in alice.list_topics(timeout=10).topics


def test_topic_admin_needs_create_delete_alter(bootstrap: str, acls: Acls) -> None:
    alice = AdminClient(conf(bootstrap, "alice"))
    topic = name("admin")
    with pytest.raises(KafkaException) as e:
        alice.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    assert error_code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert topic not in acls.admin.list_topics(timeout=10).topics
    acls.grant(ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE)
    alice.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)

    with pytest.raises(KafkaException) as e:
        alice.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=20)
    assert error_code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert len(acls.admin.list_topics(topic, timeout=10).topics[topic].partitions) == 1
    acls.grant(ResourceType.TOPIC, topic, AclOperation.ALTER)
    alice.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=20)

    resource = ConfigResource(ResourceType.TOPIC, topic)
    with pytest.raises(KafkaException) as e:
        alice.describe_configs([resource])[resource].result(timeout=20)
    assert error_code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    change = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "1234", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as e:
        alice.incremental_alter_configs([change])[change].result(timeout=20)
    assert error_code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    acls.grant(ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    alice.incremental_alter_configs([change])[change].result(timeout=20)
    assert (
        alice.describe_configs([resource])[resource].result(timeout=20)["retention.ms"].value
        == "1234"
    )

    with pytest.raises(KafkaException) as e:
        alice.delete_topics([topic])[topic].result(timeout=20)
    assert error_code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert topic in acls.admin.list_topics(timeout=10).topics
    acls.grant(ResourceType.TOPIC, topic, AclOperation.DELETE)
    alice.delete_topics([topic])[topic].result(timeout=20)


def test_groups_need_read_describe_delete(bootstrap: str, acls: Acls) -> None:
    topic, group = name("grp-topic"), name("grp")
    make_topic(acls.admin, topic)
    assert produce(conf(bootstrap, "admin"), topic) is None
    acls.grant(ResourceType.TOPIC, topic, AclOperation.READ)
    errors: list[KafkaError] = []
    consumer = Consumer(
        {
            **conf(bootstrap, "alice"),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "error_cb": errors.append,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 15
    group_error = None
    while time.monotonic() < deadline and group_error is None:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error():
            group_error = msg.error()
    consumer.close()
    assert (
        group_error is not None and group_error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    ), group_error
    alice = AdminClient(conf(bootstrap, "alice"))
    assert group not in [
        g.group_id for g in acls.admin.list_consumer_groups().result(timeout=20).valid
    ]

    acls.grant(ResourceType.GROUP, group, AclOperation.READ)
    consumer = Consumer(
        {**conf(bootstrap, "alice"), "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    value = None
    while time.monotonic() < deadline and value is None:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            value = msg.value()
    consumer.commit(asynchronous=False)
    consumer.close()
    assert value == b"v"
    assert [g.group_id for g in alice.list_consumer_groups().result(timeout=20).valid] == [group]
    described = alice.describe_consumer_groups([group])[group].result(timeout=20)
    assert described.group_id == group

    with pytest.raises(KafkaException) as e:
        alice.delete_consumer_groups([group])[group].result(timeout=20)
    assert error_code(e.value) == KafkaError.GROUP_AUTHORIZATION_FAILED
    acls.grant(ResourceType.GROUP, group, AclOperation.DELETE)
    alice.delete_consumer_groups([group])[group].result(timeout=20)

    other = name("other-grp")
    with pytest.raises(KafkaException) as e:
        alice.describe_consumer_groups([other])[other].result(timeout=20)
    assert error_code(e.value) == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_cluster_apis_need_cluster_acls(bootstrap: str, acls: Acls) -> None:
    alice = AdminClient(conf(bootstrap, "alice"))
    binding = AclBinding(
        ResourceType.TOPIC,
        "t",
        ResourcePatternType.PREFIXED,
        "User:x",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as e:
        alice.create_acls([binding])[binding].result(timeout=20)
    assert error_code(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    every = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    # confluent-kafka drops DescribeAcls' top-level error; kafka-python shows it.
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ACLResourcePatternType as PatternType
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import ClusterAuthorizationFailedError

    kp = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=USERS["alice"],
    )
    kp_filter = ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(KpResourceType.ANY, None, PatternType.ANY),
    )
    with pytest.raises(ClusterAuthorizationFailedError):
        kp.describe_acls(kp_filter)
    # librdkafka answers describe_cluster from Metadata; kafka-python sends DescribeCluster.
    with pytest.raises(ClusterAuthorizationFailedError):
        kp.describe_cluster()
    upsert = UserScramCredentialUpsertion(
        "zed", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw"
    )
    with pytest.raises(KafkaException) as e:
        alice.alter_user_scram_credentials([upsert])["zed"].result(timeout=20)
    assert error_code(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert acls.admin.describe_acls(every).result(timeout=20) == []

    acls.grant(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER)  # implies DESCRIBE
    alice.create_acls([binding])[binding].result(timeout=20)
    assert binding in alice.describe_acls(every).result(timeout=20)
    assert kp.describe_cluster()["cluster_id"]
    kp.close()
    alice.alter_user_scram_credentials([upsert])["zed"].result(timeout=20)
    deleted = alice.delete_acls(
        [
            AclBindingFilter(
                ResourceType.TOPIC,
                "t",
                ResourcePatternType.PREFIXED,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    )
    assert [b for f in deleted.values() for b in f.result(timeout=20)] == [binding]


def test_idempotent_producer_needs_idempotent_write_or_write(bootstrap: str, acls: Acls) -> None:
    topic = name("idem")
    make_topic(acls.admin, topic)
    acls.grant(ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    p = Producer({**conf(bootstrap, "alice"), "enable.idempotence": True})
    p.produce(topic, b"v")
    # The refused InitProducerId is fatal to an idempotent producer.
    with pytest.raises(KafkaException) as e:
        for _ in range(50):
            p.poll(0.2)
    assert error_code(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert end_offset(conf(bootstrap, "admin"), topic) == 0
    acls.grant(ResourceType.TOPIC, topic, AclOperation.WRITE)
    delivered: list[KafkaError | None] = []
    p = Producer({**conf(bootstrap, "alice"), "enable.idempotence": True})
    p.produce(topic, b"v", on_delivery=lambda err, _m: delivered.append(err))
    p.flush(20)
    assert delivered == [None]


def test_deny_wins_over_allow(bootstrap: str, acls: Acls) -> None:
    topic = name("deny")
    make_topic(acls.admin, topic)
    acls.grant(ResourceType.TOPIC, topic, AclOperation.ALL)
    deny = AclBinding(
        ResourceType.TOPIC,
        "deny-",
        ResourcePatternType.PREFIXED,
        ALICE,
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    acls.admin.create_acls([deny])[deny].result(timeout=20)
    err = produce(conf(bootstrap, "alice"), topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert end_offset(conf(bootstrap, "admin"), topic) == 0


def test_offset_fetch_hides_topics_without_describe(bootstrap: str, acls: Acls) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions

    seen, hidden, group = name("of-seen"), name("of-hidden"), name("of-grp")
    for topic in (seen, hidden):
        make_topic(acls.admin, topic)
    committer = Consumer({**conf(bootstrap, "admin"), "group.id": group})
    committer.commit(
        offsets=[TopicPartition(seen, 0, 3), TopicPartition(hidden, 0, 5)], asynchronous=False
    )
    committer.close()
    acls.grant(ResourceType.GROUP, group, AclOperation.DESCRIBE)
    acls.grant(ResourceType.TOPIC, seen, AclOperation.DESCRIBE)
    alice = AdminClient(conf(bootstrap, "alice"))
    # All of the group's topics: the one alice may not describe is left out.
    request = [ConsumerGroupTopicPartitions(group)]
    listed = alice.list_consumer_group_offsets(request)[group].result(timeout=20)
    assert [(tp.topic, tp.offset) for tp in listed.topic_partitions] == [(seen, 3)]
    # Named: refused for that topic alone.
    request = [
        ConsumerGroupTopicPartitions(group, [TopicPartition(seen, 0), TopicPartition(hidden, 0)])
    ]
    named = alice.list_consumer_group_offsets(request)[group].result(timeout=20)
    by_topic = {tp.topic: tp for tp in named.topic_partitions}
    assert by_topic[seen].offset == 3 and by_topic[seen].error is None
    assert by_topic[hidden].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # The admin still sees both.
    everything = acls.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    offsets = {tp.topic: tp.offset for tp in everything[group].result(timeout=20).topic_partitions}
    assert offsets == {seen: 3, hidden: 5}
