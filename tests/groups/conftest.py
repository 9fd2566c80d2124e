from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker

# Short group timings for tests: no initial rebalance delay (Kafka's default is 3 s).
GROUP_CONFIG = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 10}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data", config=GROUP_CONFIG) as b:
        yield b
