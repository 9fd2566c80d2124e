"""Cluster mode keeps SCRAM credentials, ACLs and dynamic broker configs in ZooKeeper as
Kafka did, so a user created through one broker authenticates at every broker, an ACL
created through one broker is enforced by all, and secrets sit there encrypted with
``password.encoder.secret`` -- never in clear text, never returned by DescribeConfigs.
A broker that cannot decrypt them refuses to start with one line naming the key."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from kafkalite.bench import kafka_ref
from kafkalite.cluster import Cluster, ClusterBroker
from kafkalite.controller import entity_configs
from kafkalite.controller.password_encoder import PasswordEncoder, PasswordEncoderError
from kafkalite.controller.zookeeper import free_port

SECRET = "encoder-secret-for-tests"
ADMIN_PASSWORD = "admin-pw-Zk41"
ALICE_PASSWORD = "alice-pw-Zk42"
BOB_PASSWORD = "bob-pw-Zk43"


def plain_jaas(users: dict[str, str]) -> str:
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(
        brokers=3,
        data_dir=tmp_path_factory.mktemp("secure-cluster"),
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        overrides={
            "zookeeper.session.timeout.ms": 6000,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(
                {"admin": ADMIN_PASSWORD}
            ),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            "password.encoder.secret": SECRET,
        },
    ) as c:
        yield c


def admin(address: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": address})


def sasl_ok(cluster: Cluster, broker_id: int, mechanism: str, user: str, password: str) -> bool:
    """Whether ``user`` authenticates at that broker's SASL listener (its Metadata answer
    arrives over the bootstrap connection)."""
    port = cluster.brokers[broker_id - 1].extra_ports["SASL_PLAINTEXT"]
    client = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
    )
    try:
        return bool(client.list_topics(timeout=5).brokers)
    except KafkaException:
        return False


def eventually(check, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.2)


def every_znode(zk: KazooClient, root: str) -> Iterator[tuple[str, bytes]]:
    data, _ = zk.get(root)
    yield root, data
    for child in zk.get_children(root):
        yield from every_znode(zk, f"{root}/{child}".replace("//", "/"))


def test_a_user_created_through_one_broker_authenticates_at_every_broker(
    cluster: Cluster,
) -> None:
    client = admin(cluster.brokers[0].bootstrap_servers)
    upserts = [
        UserScramCredentialUpsertion(
            "alice",
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
            ALICE_PASSWORD.encode(),
        ),
        UserScramCredentialUpsertion(
            "alice",
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
            ALICE_PASSWORD.encode(),
        ),
    ]
    # One mechanism per request: Kafka refuses a user named twice in one request.
    for upsert in upserts:
        for f in client.alter_user_scram_credentials([upsert]).values():
            f.result(timeout=30)
    for broker_id in (1, 2, 3):
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            eventually(
                lambda b=broker_id, m=mechanism: sasl_ok(cluster, b, m, "alice", ALICE_PASSWORD)
            )
        assert not sasl_ok(cluster, broker_id, "SCRAM-SHA-256", "alice", "wrong")
    stored = entity_configs.read(cluster.zk, "users", "alice")
    assert set(stored) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert (
        stored["SCRAM-SHA-512"].startswith("salt=") and "iterations=8192" in stored["SCRAM-SHA-512"]
    )
    assert any(
        json.loads(data).get("entity_path") == "users/alice"
        for _p, data in every_znode(cluster.zk, entity_configs.CHANGES)
        if data
    )
    # Described alike by another broker.
    second = admin(cluster.brokers[1].bootstrap_servers)
    described = second.describe_user_scram_credentials(["alice"])
    assert len(described["alice"].result(timeout=20).scram_credential_infos) == 2


def test_an_acl_created_through_one_broker_is_enforced_by_all(cluster: Cluster) -> None:
    topic = "guarded"
    first = admin(cluster.brokers[0].bootstrap_servers)
    first.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
    deny = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    # Describe stays allowed, so producers find each leader and are refused there.
    describe = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    second = admin(cluster.brokers[1].bootstrap_servers)
    for f in second.create_acls([deny, describe]).values():
        f.result(timeout=30)
    assert cluster.zk.exists(f"/kafka-acl/Topic/{topic}") is not None
    entries = json.loads(cluster.zk.get(f"/kafka-acl/Topic/{topic}")[0])["acls"]
    assert {
        "principal": "User:ANONYMOUS",
        "permissionType": "Deny",
        "operation": "Write",
        "host": "*",
    } in entries
    assert cluster.zk.get_children("/kafka-acl-changes")
    # Partitions 0..2 are led by all three brokers: every leader refuses the write.
    leaders = {
        p.leader for p in first.list_topics(topic, timeout=10).topics[topic].partitions.values()
    }
    assert leaders == {1, 2, 3}
    # Each broker applies the change on its ZooKeeper notification, as Kafka's do: soon,
    # not before create_acls returns.
    for partition in range(3):
        eventually(
            lambda p=partition: (
                write_error(cluster, topic, p) == KafkaError.TOPIC_AUTHORIZATION_FAILED
            )
        )
    third = admin(cluster.brokers[2].bootstrap_servers)
    described = third.describe_acls(
        AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    )
    assert sorted(map(str, described.result(timeout=20))) == sorted(map(str, [deny, describe]))


def cluster_acls_at(address: str, conf: dict[str, str]) -> set[str] | None:
    """The cluster resource's ACLs one broker enforces (None: it refuses to say)."""
    every = AclBindingFilter(
        ResourceType.BROKER,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    client = AdminClient({**conf, "bootstrap.servers": address})
    try:
        found = client.describe_acls(every).result(timeout=10)
        return {f"{b.principal}:{b.operation.name}" for b in found}
    except KafkaException:
        return None


def test_brokers_replicate_and_complete_transactions_on_cluster_action(
    cluster: Cluster,
) -> None:
    """The brokers' own requests -- a follower's OffsetForLeaderEpoch and Fetch, the
    transaction coordinator's WriteTxnMarkers to other leaders -- need CLUSTER_ACTION, as
    in Kafka. With an ACL on the cluster resource, allow.everyone.if.no.acl.found no
    longer covers it: the inter-broker principal (ANONYMOUS, on PLAINTEXT) then replicates
    a new topic and completes a transaction across all three leaders on that ACL alone."""
    sasl_port = cluster.brokers[0].extra_ports["SASL_PLAINTEXT"]
    admin_conf = {
        "bootstrap.servers": f"127.0.0.1:{sasl_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "admin",
        "sasl.password": ADMIN_PASSWORD,
    }
    sasl_admin = AdminClient(admin_conf)
    grants = [
        AclBinding(
            ResourceType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            principal,
            "*",
            operation,
            AclPermissionType.ALLOW,
        )
        for principal, operation in (
            ("User:ANONYMOUS", AclOperation.CLUSTER_ACTION),
            # To create the topic and to remove these again.
            ("User:admin", AclOperation.ALL),
        )
    ]
    plain_admin = admin(cluster.bootstrap_servers)
    for f in plain_admin.create_acls(grants).values():
        f.result(timeout=30)
    wanted = {"User:ANONYMOUS:CLUSTER_ACTION", "User:admin:ALL"}
    sasl_addresses = [f"127.0.0.1:{b.extra_ports['SASL_PLAINTEXT']}" for b in cluster.brokers]
    try:
        for address in sasl_addresses:
            eventually(lambda a=address: cluster_acls_at(a, admin_conf) == wanted)
        topic = "inter-broker-acl"
        sasl_admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(timeout=30)
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "transactional.id": "inter-broker-acl-txn",
                "message.timeout.ms": 20000,
            }
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        for partition in range(3):
            producer.produce(topic, f"v{partition}".encode(), partition=partition)
        # acks=all: each leader answers once both followers fetched the batch.
        assert producer.flush(30) == 0
        producer.commit_transaction(30)
        partitions = plain_admin.list_topics(topic, timeout=10).topics[topic].partitions
        # Three leaders (markers went to the other two over the inter-broker listener),
        # every follower in sync.
        assert {p.leader for p in partitions.values()} == {1, 2, 3}
        assert all(sorted(p.isrs) == [1, 2, 3] for p in partitions.values())
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "inter-broker-acl-reader",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
        consumer.close()
        assert sorted(got) == [b"v0", b"v1", b"v2"]
    finally:
        cleared = AclBindingFilter(
            ResourceType.BROKER,
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        for f in sasl_admin.delete_acls([cleared]).values():
            f.result(timeout=30)
        for address in sasl_addresses:
            eventually(lambda a=address: cluster_acls_at(a, admin_conf) == set())


def write_error(cluster: Cluster, topic: str, partition: int) -> int | None:
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "retries": 0})
    producer.produce(topic, b"x", partition=partition, on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors, partition
    return None if errors[0] is None else errors[0].code()


def test_dynamic_secrets_are_encrypted_and_applied_without_a_restart(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    pid = broker.pid
    assert not sasl_ok(cluster, 1, "PLAIN", "bob", BOB_PASSWORD)
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    client = admin(broker.bootstrap_servers)
    jaas = plain_jaas({"admin": ADMIN_PASSWORD, "bob": BOB_PASSWORD})
    resource = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[ConfigEntry(key, jaas, incremental_operation=AlterConfigOpType.SET)],
    )
    client.incremental_alter_configs([resource])[resource].result(timeout=30)
    assert sasl_ok(cluster, 1, "PLAIN", "bob", BOB_PASSWORD)
    assert sasl_ok(cluster, 1, "PLAIN", "admin", ADMIN_PASSWORD)
    assert not sasl_ok(cluster, 2, "PLAIN", "bob", BOB_PASSWORD), "per broker only"
    assert broker.pid == pid

    entry = client.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
    described = next(iter(entry.values())).result(timeout=20)[key]
    assert described.value is None and described.is_sensitive

    stored = entity_configs.read(cluster.zk, "brokers", "1")[key]
    assert stored.startswith("encryptedPassword:") or "encryptedPassword:" in stored
    assert PasswordEncoder(SECRET).decode(stored) == jaas
    for path, data in every_znode(cluster.zk, "/config"):
        for secret in (ADMIN_PASSWORD, ALICE_PASSWORD, BOB_PASSWORD):
            assert secret.encode() not in (data or b""), path
    for b in cluster.brokers:
        log = (b.data_dir / "broker.log").read_bytes()
        assert BOB_PASSWORD.encode() not in log


def start_broker(cluster: Cluster, broker_id: int, tmp: Path, **settings: str) -> subprocess.Popen:
    config = {
        "broker.id": str(broker_id),
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{free_port()},PLAINTEXT://127.0.0.1:{free_port()}",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(tmp / f"data-{broker_id}"),
        "zookeeper.connect": cluster.zookeeper_connect,
        "sasl.enabled.mechanisms": "PLAIN",
        **settings,
    }
    cmd = [sys.executable, "-m", "kafkalite.cli", "broker"]
    for k, v in config.items():
        cmd += ["--override", f"{k}={v}"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("secret", [None, "not-the-secret"])
def test_a_broker_that_cannot_decrypt_its_secrets_refuses_to_start(
    cluster: Cluster, tmp_path: Path, secret: str | None
) -> None:
    broker_id = 7
    jaas = plain_jaas({"admin": ADMIN_PASSWORD})
    entity_configs.set_keys(
        cluster.zk,
        "brokers",
        str(broker_id),
        {
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PasswordEncoder(SECRET).encode(
                jaas
            )
        },
    )
    settings = {} if secret is None else {"password.encoder.secret": secret}
    proc = start_broker(cluster, broker_id, tmp_path, **settings)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "password.encoder.secret" in lines[0]
    assert "Traceback" not in err and ADMIN_PASSWORD not in err + out


def test_configs_written_before_a_broker_first_starts_are_what_it_starts_with(
    cluster: Cluster, tmp_path: Path
) -> None:
    broker_id = 8
    jaas = plain_jaas({"carol": "carol-pw-Zk44"})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkalite.cli",
            "configs",
            "--zookeeper",
            cluster.zookeeper_connect,
            "--entity-type",
            "brokers",
            "--entity-name",
            str(broker_id),
            "--alter",
            "--add-config",
            f"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,"
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config=[{jaas}],"
            f"password.encoder.secret={SECRET}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    stored = entity_configs.read(cluster.zk, "brokers", str(broker_id))
    assert "carol-pw-Zk44" not in json.dumps(stored) and SECRET not in json.dumps(stored)
    assert stored["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] == "PLAIN"

    with running_broker(cluster, broker_id, tmp_path, SECRET) as (sasl_port, log):
        client = sasl_plain_admin(sasl_port, "carol", "carol-pw-Zk44")
        assert client.list_topics(timeout=10).brokers
        assert b"carol-pw-Zk44" not in log.read_bytes()


@contextmanager
def running_broker(
    cluster: Cluster, broker_id: int, tmp: Path, secret: str, **settings: str
) -> Iterator[tuple[int, Path]]:
    """A broker of ``cluster`` started by the CLI with only its listeners and
    ``password.encoder.secret`` (plus ``settings``), once registered: (its SASL_PLAINTEXT
    port, its log file). Stopped on exit."""
    sasl_port = free_port()
    config = {
        "broker.id": str(broker_id),
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},PLAINTEXT://127.0.0.1:{free_port()}",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(tmp / "data"),
        "zookeeper.connect": cluster.zookeeper_connect,
        "password.encoder.secret": secret,
        **settings,
    }
    cmd = [sys.executable, "-m", "kafkalite.cli", "broker"]
    for k, v in config.items():
        cmd += ["--override", f"{k}={v}"]
    log = tmp / "broker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        eventually(lambda: cluster.zk.exists(f"/brokers/ids/{broker_id}") is not None, 60)
        yield sasl_port, log
    finally:
        proc.terminate()
        proc.wait(60)


def sasl_plain_admin(port: int, user: str, password: str) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
        }
    )


def test_rotating_the_encoder_secret_re_encrypts_stored_secrets_at_start(
    cluster: Cluster, tmp_path: Path
) -> None:
    broker_id = 9
    old_secret, new_secret = "encoder-secret-before", "encoder-secret-after"
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    jaas = plain_jaas({"dave": "dave-pw-Zk45"})
    mechanisms = "listener.name.sasl_plaintext.sasl.enabled.mechanisms"
    stored = {key: PasswordEncoder(old_secret).encode(jaas), mechanisms: "PLAIN"}
    entity_configs.set_keys(cluster.zk, "brokers", str(broker_id), stored)

    settings = {"password.encoder.old.secret": old_secret}
    with running_broker(cluster, broker_id, tmp_path, new_secret, **settings) as (port, log):
        # Re-encrypted under the new secret before the broker used it; the old one no
        # longer opens it.
        value = entity_configs.read(cluster.zk, "brokers", str(broker_id))[key]
        assert PasswordEncoder(new_secret).decode(value) == jaas
        with pytest.raises(PasswordEncoderError):
            PasswordEncoder(old_secret).decode(value)
        assert sasl_plain_admin(port, "dave", "dave-pw-Zk45").list_topics(timeout=10).brokers
        assert b"dave-pw-Zk45" not in log.read_bytes()


def cluster_configs(bootstrap: str, *args: str) -> str:
    """Kafka 4.1's ``kafka-configs`` for broker entities, through ``bootstrap``."""
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "kafka.admin.ConfigCommand",
        ["--bootstrap-server", bootstrap, "--entity-type", "brokers", *args],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def cleaner_threads(broker: ClusterBroker) -> str | None:
    """``log.cleaner.threads`` as the broker itself describes it."""
    resource = ConfigResource(ResourceType.BROKER, str(broker.broker_id))
    client = admin(broker.bootstrap_servers)  # kept alive until the answer is in
    described = client.describe_configs([resource])
    return next(iter(described.values())).result(timeout=20)["log.cleaner.threads"].value


def test_kafka_configs_manages_every_broker_of_the_cluster(cluster: Cluster) -> None:
    first, second, third = (b.bootstrap_servers for b in cluster.brokers)
    secret = "jaas-secret-Zk46"
    jaas = plain_jaas({"erin": secret})
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    two = ("--entity-name", "2")
    # Sent to broker 1, about broker 2: stored in ZooKeeper and described by broker 2.
    cluster_configs(first, *two, "--alter", "--add-config", f"log.cleaner.threads=4,{key}=[{jaas}]")
    try:
        eventually(lambda: "log.cleaner.threads=4 " in cluster_configs(second, *two, "--describe"))
        out = cluster_configs(second, *two, "--describe")
        assert f"{key}=null sensitive=true" in out, out
        assert secret not in out
        stored = json.dumps(entity_configs.read(cluster.zk, "brokers", "2"))
        assert "log.cleaner.threads" in stored and secret not in stored
        eventually(lambda: sasl_ok(cluster, 2, "PLAIN", "erin", secret))
        assert not sasl_ok(cluster, 3, "PLAIN", "erin", secret), "broker 2's only"

        # The cluster-wide default, set through broker 3, reaches every broker.
        cluster_configs(
            third, "--entity-default", "--alter", "--add-config", "log.cleaner.threads=3"
        )
        for b in cluster.brokers:
            want = "4" if b.broker_id == 2 else "3"
            eventually(lambda b=b, want=want: cleaner_threads(b) == want)
    finally:
        cluster_configs(first, *two, "--alter", "--delete-config", f"log.cleaner.threads,{key}")
        cluster_configs(
            first, "--entity-default", "--alter", "--delete-config", "log.cleaner.threads"
        )
