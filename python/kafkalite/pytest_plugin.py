"""pytest fixtures for testing against a real kafkalite broker (registered via pytest11)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalite.broker import Broker


@pytest.fixture
def kafkalite_broker(tmp_path: Path) -> Iterator[Broker]:
    """A started in-process broker on an ephemeral port, data under ``tmp_path``."""
    with Broker(log_dirs=tmp_path / "kafkalite-data") as broker:
        yield broker


@pytest.fixture
def kafkalite_broker_factory(tmp_path: Path) -> Iterator[Callable[..., Broker]]:
    """Start brokers with custom settings; all are stopped at the end of the test."""
    started: list[Broker] = []

    def start(**kwargs: object) -> Broker:
        kwargs.setdefault("log_dirs", tmp_path / f"kafkalite-data-{len(started)}")
        broker = Broker(**kwargs).start()  # type: ignore[arg-type]
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()
