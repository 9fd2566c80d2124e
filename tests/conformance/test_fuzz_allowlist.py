"""The fuzz allowlist: saved fuzz cases a ``[[fuzz]]`` entry covers are listed with its
reason, the rest stay unlisted (and fail ``bench/conformance_fuzz.py``); a crash is never
listed. No brokers: cases are judged as the fuzzer saves them."""

from __future__ import annotations

from pathlib import Path

from kafkalite.conformance import allowlist


def case(api: str, why: str, request: str) -> dict:  # type: ignore[type-arg]
    return {"api": api, "version": 4, "why": why, "request": request}


def test_entries_list_matching_cases_and_leave_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "allow.toml"
    path.write_text(
        '[[fuzz]]\napi = "Fetch"\nwhy = "*accepted*"\nrequest = "max_bytes: -\\\\d"\n'
        'reason = "a reason"\n'
    )
    entries = allowlist.load_fuzz(path)
    accepted = "kafkalite accepted what Kafka refused"
    cases = [
        case("Fetch", accepted, "FetchRequest { max_bytes: -131072, min_bytes: 1 }"),
        case("Fetch", accepted, "FetchRequest { max_bytes: 1048576 }"),
        case("Fetch", "kafkalite hung", "FetchRequest { max_bytes: -1 }"),
        case("ListOffsets", accepted, "ListOffsetsRequest { max_bytes: -1 }"),
        case("Fetch", "kafkalite unreachable: crashed", "FetchRequest { max_bytes: -1 }"),
    ]
    listed, unlisted = allowlist.judge_fuzz(cases, entries)
    assert list(listed.values()) == [1]
    assert [c["request"] for c in unlisted] == [c["request"] for c in cases[1:]]


def test_shipped_fuzz_entries_load_with_reasons() -> None:
    entries = allowlist.load_fuzz()
    assert entries, "the shipped allowlist lists the fuzz cases that stay"
    for entry in entries:
        assert entry.reason.strip() and entry.api


def test_an_entry_with_kafka_errors_covers_only_those_refusals(tmp_path: Path) -> None:
    path = tmp_path / "allow.toml"
    path.write_text(
        '[[fuzz]]\napi = "DeleteGroups"\nwhy = "*accepted*"\nrequest = "."\n'
        'kafka_errors = [69]\nreason = "state only kafkalite has"\n'
    )
    entries = allowlist.load_fuzz(path)
    accepted = "kafkalite accepted what Kafka refused"

    def refused_with(*codes: int) -> dict:  # type: ignore[type-arg]
        c = case("DeleteGroups", accepted, 'DeleteGroupsRequest { groups_names: ["g"] }')
        c["kafka"] = {"Answered": {"accepted": False, "errors": list(codes)}}
        return c

    cases = [refused_with(69), refused_with(69, 42), refused_with(42), refused_with()]
    cases.append(case("DeleteGroups", accepted, "DeleteGroupsRequest {}"))
    listed, unlisted = allowlist.judge_fuzz(cases, entries)
    assert list(listed.values()) == [1]
    assert unlisted == cases[1:]
