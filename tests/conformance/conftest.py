"""One kafkalite and one Apache Kafka broker for the whole conformance suite (the JVM
starts once; the Kafka jars are cached like the bench's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite.conformance.brokers import running_pair


@pytest.fixture(scope="session")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with running_pair(tmp_path_factory.mktemp("conformance")) as pair:
        yield pair
