"""The two brokers of a conformance run: kafkalite's daemon and Apache Kafka (KRaft, one
node), started by the bench's own launchers with the same settings."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from kafkalite.bench.systems import Kafka, Kafkalite

KAFKA_VERSION = "4.1.1"

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
}


@contextlib.contextmanager
def running_pair(work_dir: Path, kafka_version: str = KAFKA_VERSION) -> Iterator[tuple[str, str]]:
    """(kafkalite bootstrap, kafka bootstrap), both brokers running until the block ends."""
    kafkalite = Kafkalite(work_dir / "kafkalite-data", overrides=SHARED_SETTINGS)
    kafka = Kafka(work_dir / "kafka-data", version=kafka_version, overrides=SHARED_SETTINGS)
    try:
        kafkalite.start()
        kafka.start()
        yield kafkalite.bootstrap, kafka.bootstrap
    finally:
        kafka.stop()
        kafkalite.stop()
