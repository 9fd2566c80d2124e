"""The two brokers of a conformance run: kafkalite's daemon and Apache Kafka (KRaft, one
node), started by the bench's own launchers with the same settings.

Both run an ACL authorizer (the anonymous PLAINTEXT principal is a super user, so every
script but the security ones is authorised as without one) and a second, SASL_PLAINTEXT
listener with PLAIN users and SCRAM, where the SASL and ACL scripts authenticate as a
super user (admin) or as a user with no ACLs (alice)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from kafkalite.bench.systems import Kafka, Kafkalite, free_port

KAFKA_VERSION = "4.4.0"

# Settings both brokers run with, so a difference is the broker's, not its config's.
# Kafka's defaults otherwise; kafkalite's defaults are Kafka's for these keys but the two
# below, which are set for speed on both (a 50-partition offsets topic and a 3 s initial
# rebalance delay would only slow each run down).
SHARED_SETTINGS = {
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "0",
    "message.max.bytes": "1048588",
    # Fetch from follower (KIP-392): every consumer Fetch v11+ goes through Kafka's
    # rack-aware selector on both (the read_replica scripts).
    "broker.rack": "r1",
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}


#: PLAIN users of the SASL listener (the runner's security scripts log in with these).
PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}

SECURITY_SETTINGS = {
    # Kafka's KRaft authorizer; kafkalite accepts the name and applies the same rules.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in PLAIN_USERS.items())
        + ";"
    ),
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    ),
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    ),
}


def _add_sasl_listener(kafkalite: Kafkalite, kafka: Kafka, host: str) -> tuple[str, str]:
    """A SASL_PLAINTEXT listener on each broker; their bootstrap addresses."""
    ours, theirs = free_port(), free_port()
    kafkalite.settings["listeners"] += f",SASL_PLAINTEXT://{host}:{ours}"
    props = kafka.props
    props["listeners"] += f",SASL_PLAINTEXT://{host}:{theirs}"
    props["advertised.listeners"] += f",SASL_PLAINTEXT://{host}:{theirs}"
    props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
    return f"{host}:{ours}", f"{host}:{theirs}"


@contextlib.contextmanager
def running_pair(
    work_dir: Path, kafka_version: str = KAFKA_VERSION, kafka_only: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """(kafkalite bootstrap, kafka bootstrap), both brokers running until the block ends."""
    with running_pairs(work_dir, kafka_version, kafka_only) as (plain, _):
        yield plain


@contextlib.contextmanager
def running_pairs(
    work_dir: Path, kafka_version: str = KAFKA_VERSION, kafka_only: dict[str, str] | None = None
) -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
    """((kafkalite, kafka) PLAINTEXT bootstraps, (kafkalite, kafka) SASL_PLAINTEXT ones).
    `kafka_only`: settings for Kafka alone (how the fuzzer shortens its delete delay)."""
    settings = {**SHARED_SETTINGS, **SECURITY_SETTINGS}
    kafkalite = Kafkalite(work_dir / "kafkalite-data", overrides=settings)
    kafka = Kafka(
        work_dir / "kafka-data", version=kafka_version, overrides={**settings, **(kafka_only or {})}
    )
    sasl = _add_sasl_listener(kafkalite, kafka, "127.0.0.1")
    try:
        kafkalite.start()
        kafka.start()
        yield (kafkalite.bootstrap, kafka.bootstrap), sasl
    finally:
        # A broker gone before the end makes every later comparison void: say so.
        for broker in (kafkalite, kafka):
            status = broker.proc.poll() if broker.proc is not None else None
            if status is not None:
                print(f"{broker.name} exited during the run (status {status})", file=sys.stderr)
        kafka.stop()
        kafkalite.stop()
