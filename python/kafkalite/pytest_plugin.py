"""pytest fixtures for testing against a real kafkalite broker, registered through the
``pytest11`` entry point so installing kafkalite is enough to use them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kafkalite.broker import Broker

if TYPE_CHECKING:
    from kafkalite.cluster import Cluster


@pytest.fixture
def kafkalite_broker(tmp_path: Path) -> Iterator[Broker]:
    """A started in-process broker on an ephemeral port of 127.0.0.1, data under
    ``tmp_path``; stopped when the test ends."""
    with Broker(log_dirs=tmp_path / "kafkalite-data") as broker:
        yield broker


@pytest.fixture
def kafkalite_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A local cluster of three broker processes and a private ZooKeeper on loopback, data
    under ``tmp_path``; stopped when the test ends. Brokers' ZooKeeper sessions time out
    after 6 s, so a killed broker's leaderships move within seconds."""
    from kafkalite.cluster import Cluster

    with Cluster(
        brokers=3,
        overrides={"zookeeper.session.timeout.ms": 6000},
        data_dir=tmp_path / "kafkalite-cluster",
    ) as cluster:
        yield cluster


@pytest.fixture
def kafkalite_broker_factory(tmp_path: Path) -> Iterator[Callable[..., Broker]]:
    """Start brokers with custom settings (``Broker``'s arguments, e.g. ``config={...}`` or
    ``log_dirs=`` to restart on the same data); all are stopped when the test ends."""
    started: list[Broker] = []

    def start(**kwargs: object) -> Broker:
        config = kwargs.get("config")
        given = isinstance(config, Mapping) and ("log.dirs" in config or "log.dir" in config)
        if not given:
            kwargs.setdefault("log_dirs", tmp_path / f"kafkalite-data-{len(started)}")
        broker = Broker(**kwargs)  # type: ignore[arg-type]
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.stop()
