"""One kafkalite and one Apache Kafka broker for the whole conformance suite (the JVM
starts once; the Kafka jars are cached like the bench's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite.conformance.brokers import running_pairs


@pytest.fixture(scope="session")
def pairs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
    """((kafkalite, kafka) PLAINTEXT, (kafkalite, kafka) SASL_PLAINTEXT) bootstraps."""
    with running_pairs(tmp_path_factory.mktemp("conformance")) as both:
        yield both


@pytest.fixture(scope="session")
def brokers(pairs: tuple[tuple[str, str], tuple[str, str]]) -> tuple[str, str]:
    return pairs[0]


@pytest.fixture(scope="session")
def sasl(pairs: tuple[tuple[str, str], tuple[str, str]]) -> tuple[str, str]:
    return pairs[1]
