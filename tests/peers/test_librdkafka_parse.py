"""How `python -m bench.peers librdkafka` reads librdkafka's test-runner output: the
summary table, the failure messages, a run cut short, and 0101's rxbytes evidence (its
own check only prints). Output shaped as test.c prints it; no broker, no build."""

from __future__ import annotations

import pytest

from bench.peers.common import FAIL, PASS, SKIP, SuiteError
from bench.peers.librdkafka import parse

C = "\033[36m"
R = "\033[31m"
Z = "\033[0m"


def say(test: str, t: float, text: str) -> str:
    return f"{C}[{test:<28}/{t:7.3f}s] {text}\n{Z}"


def row(test: str, state: str, why: str = "") -> str:
    tail = f"{Z}|{C} {why}{Z}" if why else f"{Z}|"
    return f"|{C} {test:<40} | {state:>10} | {1.5:7.3f}s {tail}\n"


SUMMARY = "TEST 20261128202806 (bare, scenario default) SUMMARY\n#====#\n"


def test_summary_rows_give_each_outcome_and_failure_message() -> None:
    out = (
        say("0067_empty_topic", 0, "================= Running test 0067_empty_topic ===")
        + say("0081_admin", 0, "================= Running test 0081_admin ===")
        + f'{R}### Test "0081_admin (do_test_CreateAcls:1539)" failed at 0081-admin.c:1603:'
        "do_test_CreateAcls() at Sat Nov 28 20:28:06 2026: ###\n"
        "do_test_CreateAcls:1539: do_test_CreateAcls():1603: Expected success, not "
        f"SECURITY_DISABLED: No Authorizer is configured\n{Z}"
        + SUMMARY
        + row("<MAIN>", "PASSED")
        + row("0004_conf", "SKIPPED", "Filtered due to negative test flags")
        + row("0035_api_version", "SKIPPED", "requires broker version >= 5.0.0")
        + row("0067_empty_topic", "PASSED")
        + row("0081_admin", "FAILED", "do_test_CreateAcls:1539: truncated")
    )
    got = parse(out)
    # 0004 is a local test, left out by the harness (-L): not a result.
    assert {n: o.outcome for n, o in got.items()} == {
        "0035_api_version": SKIP,
        "0067_empty_topic": PASS,
        "0081_admin": FAIL,
    }
    assert got["0035_api_version"].lines == ["requires broker version >= 5.0.0"]
    assert got["0081_admin"].lines == [
        "do_test_CreateAcls:1539: do_test_CreateAcls():1603: Expected success, not "
        "SECURITY_DISABLED: No Authorizer is configured"
    ]


def test_a_test_cut_short_fails_with_its_last_lines() -> None:
    out = say("0081_admin", 0, "================= Running test 0081_admin ===") + say(
        "0081_admin", 9.5, "Call DescribeAcls"
    )
    got = parse(out)
    assert got["0081_admin"].outcome == FAIL
    assert got["0081_admin"].lines[0] == "never ended: the runner stopped first"
    assert got["0081_admin"].lines[-1] == "Call DescribeAcls"


def test_without_a_summary_each_test_s_end_line_counts() -> None:
    # A failed test leaves threads behind; the runner's exit check then aborts.
    out = (
        say("0067_empty_topic", 0, "================= Running test 0067_empty_topic ===")
        + say(
            "0067_empty_topic",
            5,
            f"{Z}================= Test 0067_empty_topic PASSED ================={Z}",
        )
        + say("0081_admin", 0, "================= Running test 0081_admin ===")
        + f'{R}### Test "0081_admin (do_test_CreatePartitions:491)" failed at 0081-admin.c:629:'
        "do_test_CreatePartitions() at Sat Nov 28 20:28:38 2026: ###\n"
        "Test assertion failed: CreatePartitions failed: Broker: Invalid replica assignment\n"
        # No end line: a failure ends the test's thread at once.
         + f'{R}### Test "<MAIN>" failed at test.c:1946:test_wait_exit() at now: ###\n'
        "5 thread(s) still active in librdkafka\n"
    )
    got = parse(out)
    assert got["0067_empty_topic"].outcome == PASS
    assert got["0081_admin"].outcome == FAIL
    assert got["0081_admin"].lines == [
        "Test assertion failed: CreatePartitions failed: Broker: Invalid replica assignment"
    ]


def test_no_test_at_all_is_a_suite_error() -> None:
    with pytest.raises(SuiteError, match="ran no test"):
        parse("% Unknown option\n")


def fff(rx: dict[int, int]) -> str:
    lines = say("0101_fetch_from_follower", 0, "================= Running test 0101 ===")
    for broker, n in rx.items():
        tags = (" (leader)" if broker == 1 else "") + (
            " (preferred replica)" if broker == 2 else ""
        )
        text = f"\033[33mrxbytes for replica on broker {broker}: {n}{tags}"
        lines += say("0101_fetch_from_follower", 20, text)
    return lines + SUMMARY + row("0101_fetch_from_follower", "PASSED")


def test_0101_passes_when_the_preferred_follower_sent_the_most() -> None:
    got = parse(fff({1: 5_000, 2: 130_000, 3: 2_000}))["0101_fetch_from_follower"]
    assert got.outcome == PASS
    assert got.lines == [
        "rxbytes for replica on broker 1: 5000 (leader)",
        "rxbytes for replica on broker 2: 130000 (preferred replica)",
        "rxbytes for replica on broker 3: 2000",
    ]


def test_0101_fails_when_the_leader_served_the_bytes() -> None:
    # The test itself passes here (its test_assert only prints).
    got = parse(fff({1: 130_000, 2: 4_000, 3: 2_000}))["0101_fetch_from_follower"]
    assert got.outcome == FAIL
    assert got.lines[0] == "the preferred replica sent no more bytes than another"
