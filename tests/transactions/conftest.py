from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker

# Few internal partitions (fast creation), no initial rebalance delay, and a quick check
# for timed-out transactions so the timeout test runs in seconds.
TXN_CONFIG = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 4,
    "transaction.state.log.num.partitions": 4,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=TXN_CONFIG) as b:
        yield b
