"""failOnDataLoss: offsets deleted by retention fail the query by default, and are skipped
with failOnDataLoss=false."""

from __future__ import annotations

import json
import time

import pytest

from kafkalite._core import KafkaClient
from kafkalite.spark.options import EARLIEST
from tests.spark.helpers import create_topic, produce


def test_fail_on_data_loss(spark, kafkalite_broker_factory) -> None:
    broker = kafkalite_broker_factory(config={"log.retention.check.interval.ms": 100})
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "short", 1, {"segment.bytes": "16384", "retention.bytes": "32768"})
    # Small produce calls make small batches, so segments roll and old ones expire.
    for _ in range(10):
        produce(bootstrap, "short", [(None, b"x" * 100, 0, None) for _ in range(50)])
    with KafkaClient(bootstrap) as client:
        deadline = time.monotonic() + 30
        while (start := client.list_offsets({("short", 0): EARLIEST})[("short", 0)]) == 0:
            assert time.monotonic() < deadline, "retention never deleted a segment"
            time.sleep(0.1)

    def load(**options: str):  # type: ignore[no-untyped-def]
        reader = (
            spark.read.format("kafkalite")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "short")
            .option("startingOffsets", json.dumps({"short": {"0": 0}}))
            .option("endingOffsets", json.dumps({"short": {"0": 500}}))
        )
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    with pytest.raises(Exception, match="failOnDataLoss"):
        load().collect()
    offsets = sorted(r.offset for r in load(failOnDataLoss="false").select("offset").collect())
    assert offsets[0] >= start > 0
    assert offsets == list(range(offsets[0], 500))
