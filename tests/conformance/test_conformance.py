"""The quick conformance subset against a real Apache Kafka, and proof the runner fails."""

from __future__ import annotations

import io
import json

import pytest

from kafkalite import _core
from kafkalite.conformance import allowlist, report


def run(brokers: tuple[str, str], **kwargs: object) -> dict:  # type: ignore[type-arg]
    return json.loads(_core.conformance_run(*brokers, quick=True, **kwargs))


def test_quick_subset_matches_kafka(brokers: tuple[str, str], sasl: tuple[str, str]) -> None:
    data = run(brokers, sasl=sasl)
    outcome = report.judge(data, allowlist.load())
    text = io.StringIO()
    report.write(outcome, text)
    summary = json.loads(text.getvalue().splitlines()[-1])
    assert summary["apis"] >= 20 and summary["requests"] > 200, summary
    assert outcome.ok, text.getvalue()


def test_injected_null_to_empty_message_is_reported(brokers: tuple[str, str]) -> None:
    data = run(brokers, apis=["CreateTopics"], inject=("CreateTopics", "error_message", 'Some("")'))
    outcome = report.judge(data, allowlist.load())
    found = [d for d in outcome.unlisted if d["path"].endswith("error_message")]
    assert found, outcome.unlisted
    assert {(d["kafkalite"], d["kafka"]) for d in found} >= {('Some("")', "None")}
    text = io.StringIO()
    report.write(outcome, text)
    assert 'kafkalite: Some("")' in text.getvalue() and "kafka:     None" in text.getvalue()
    assert json.loads(text.getvalue().splitlines()[-1])["differences"] == len(outcome.unlisted)


def test_a_message_changed_only_in_case_is_reported(brokers: tuple[str, str]) -> None:
    # Messages are compared as text (issue 40): Kafka's "Topic 'ct-v7' already exists."
    # with a lower-case first letter is a difference.
    lower = "Some(\"topic 'ct-v7' already exists.\")"
    data = run(brokers, apis=["CreateTopics"], inject=("CreateTopics", "error_message", lower))
    outcome = report.judge(data, allowlist.load())
    found = {
        (d["kafkalite"], d["kafka"])
        for d in outcome.unlisted
        if d["path"] == "topics[0].error_message" and d["kafka"] != "None"
    }
    assert (lower, "Some(\"Topic 'ct-v7' already exists.\")") in found, found
    assert not outcome.ok


def test_an_allowlist_entry_that_matches_nothing_fails_the_run(brokers: tuple[str, str]) -> None:
    data = run(brokers, apis=["DescribeCluster"])
    entry = allowlist.Entry(api="DescribeCluster", path="no.such.field", reason="test")
    outcome = report.judge(data, [entry])
    assert outcome.stale == [entry] and not outcome.ok


def test_cli_reports_per_version_and_ends_with_json(
    brokers: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from kafkalite.cli import main

    args = ["conformance", "--quick", "--brokers", ",".join(brokers), "--api", "DescribeCluster"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["DescribeCluster", "v2"] for line in lines), lines
    summary = json.loads(lines[-1])
    assert summary["apis"] == 2  # ApiVersions is always played, then the one asked
    assert summary["differences"] == 0 and summary["requests"] > 4


def test_an_unscripted_api_is_pending_until_a_script_plays_it() -> None:
    """An advertised API no script plays fails the run unless the allowlist names it as
    unscripted; once a script plays it, the unscripted entry is stale and fails the run."""
    pending = allowlist.Entry(api="ElectLeaders", path="*", reason="test", unscripted=True)
    exchange = {
        "api": "ElectLeaders",
        "version": 0,
        "script": "s",
        "step": "x",
        "fields": 3,
        "differences": [],
    }
    unplayed = {"exchanges": [], "uncovered": ["ElectLeaders v0"], "ranges": [], "seconds": 0}
    assert not report.judge(unplayed, []).ok
    outcome = report.judge(unplayed, [pending])
    assert outcome.ok and outcome.summary()["unscripted"] == 1
    played = {"exchanges": [exchange], "uncovered": [], "ranges": [], "seconds": 0}
    outcome = report.judge(played, [pending])
    assert not outcome.ok and outcome.stale == [pending]
    # An unscripted entry never excuses a difference.
    diff = {"path": "results[*].error_code", "kafkalite": "0", "kafka": "1"}
    different = {**played, "exchanges": [{**exchange, "differences": [diff]}]}
    assert report.judge(different, [pending]).unlisted


def test_an_api_kafka_does_not_advertise_fails_unless_an_unscripted_entry_says_why() -> None:
    """Kafka 4.4.0 serves the client telemetry APIs only with a receiver plugin: kafkalite
    advertising one Kafka does not fails the range check unless the allowlist's unscripted
    entry for it gives the reason; a wider range than Kafka's fails either way."""
    missing = {"api": "PushTelemetry", "kafkalite": [0, 0], "kafka": None}
    data = {
        "exchanges": [],
        "uncovered": ["PushTelemetry v0"],
        "ranges": [{**missing, "status": "not in kafka"}],
        "seconds": 0,
    }
    why = allowlist.Entry(api="PushTelemetry", path="*", reason="test", unscripted=True)
    assert not report.judge(data, []).ok
    assert report.judge(data, [why]).ok
    wider = {**data, "ranges": [{**missing, "kafka": [0, 0], "status": "wider"}]}
    assert not report.judge(wider, [why]).ok
