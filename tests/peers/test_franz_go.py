"""franz-go's own tests against a kafkalite broker: the quick subset of `python -m
bench.peers franz-go` (its transactional ETL test, a chain of groups with classic and
KIP-848 members, and the broker-side regex test) and its four share-group tests, built
from the Go module proxy's franz-go into a cache outside the checkout (the first run
fetches and compiles it, later runs reuse it). The full suite, also against Apache Kafka,
is `python -m bench.peers franz-go` (bench/results/peers/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.peers import franz_go
from bench.peers.common import PASS, broker

EXPECTED = {"TestTxnEtl", "Test848RegexBrokerResolves"}
# The ETL test's KIP-848 runs (beside its classic ones).
EXPECTED_SUBTESTS = {
    f"TestTxnEtl/{run}" for run in ("range/848", "sticky/848", "sticky/848/static")
}


@pytest.fixture(scope="module")
def kgo_test() -> Path:
    if shutil.which("go") is None:
        pytest.fail("go is not installed: franz-go's tests need the Go toolchain (go.dev/dl)")
    return franz_go.build()


def test_franz_go_quick_subset_passes(kgo_test: Path, tmp_path: Path) -> None:
    log = tmp_path / "franz-go.jsonl"
    with broker("kafkalite", tmp_path) as bootstrap:
        results = franz_go.run(
            bootstrap, log, franz_go.QUICK, franz_go.QUICK_RECORDS, timeout_s=300
        )
    assert set(results) == EXPECTED, f"ran {sorted(results)}"
    failed = {name: r.lines for name, r in results.items() if r.outcome != PASS}
    assert not failed, f"franz-go tests failed against kafkalite: {failed}"
    passed = set()
    for line in log.read_text().splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("Action") == "pass" and "/" in event.get("Test", ""):
            passed.add(event["Test"])
    assert EXPECTED_SUBTESTS <= passed, f"KIP-848 runs that passed: {sorted(passed)}"


SHARE_TESTS = {
    "TestShareGroup",
    "TestShareGroupETL",
    "TestShareGroupAckOnClose",
    "TestShareGroupOffsetsAdmin",
}


def test_franz_go_share_group_tests_pass(kgo_test: Path, tmp_path: Path) -> None:
    """KIP-932 share groups: franz-go skips these on a broker without ShareFetch and
    ShareAcknowledge v2, so a skip is a failure here."""
    log = tmp_path / "franz-go-share.jsonl"
    with broker("kafkalite", tmp_path) as bootstrap:
        results = franz_go.run(
            bootstrap, log, franz_go.SHARE, franz_go.QUICK_RECORDS, timeout_s=300
        )
    assert set(results) == SHARE_TESTS, f"ran {sorted(results)}"
    not_passed = {name: (r.outcome, r.lines) for name, r in results.items() if r.outcome != PASS}
    assert not not_passed, f"franz-go share tests did not pass against kafkalite: {not_passed}"
