"""Differences that must stay for now (a feature not built yet), each with its reason.

An entry names an API, optionally a version range and a step, and a leaf path glob (``*``
matches anything). A difference no entry covers fails the run; so does an entry that
covered nothing in a run that played its API and versions — the list stays honest when a
difference disappears. An ``[[unscripted]]`` entry names an API kafkalite advertises that
no script plays yet: its versions are reported as pending rather than failing the run, and
the entry turns stale (failing) once a script plays the API. An API the compared Kafka does
not advertise at all fails the run's range check unless such an entry says why (Kafka
serves the client telemetry APIs only with a receiver plugin, for one).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATH = Path(__file__).with_name("allowlist.toml")


@dataclass
class Entry:
    api: str
    path: str
    reason: str
    versions: tuple[int, int] | None = None
    step: str | None = None
    #: An API kafkalite advertises that no script plays yet: it excuses the API's
    #: uncovered versions, never a difference.
    unscripted: bool = False
    used: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        self._path_re = re.compile(_glob(self.path))
        self._step_re = re.compile(_glob(self.step)) if self.step else None

    def applies_to(self, api: str, version: int) -> bool:
        if api != self.api:
            return False
        return self.versions is None or self.versions[0] <= version <= self.versions[1]

    def covers(self, api: str, version: int, step: str, path: str) -> bool:
        if self.unscripted or not self.applies_to(api, version):
            return False
        if self._step_re is not None and not self._step_re.fullmatch(step):
            return False
        return bool(self._path_re.fullmatch(path))

    def describe(self) -> str:
        versions = f" v{self.versions[0]}-{self.versions[1]}" if self.versions else ""
        if self.unscripted:
            return f"{self.api}{versions} (unscripted): {self.reason}"
        step = f" [{self.step}]" if self.step else ""
        return f"{self.api}{versions}{step} {self.path}: {self.reason}"


def _glob(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def _versions(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    low, _, high = str(text).partition("-")
    return int(low), int(high or low)


def load(path: Path = DEFAULT_PATH) -> list[Entry]:
    data = tomllib.loads(path.read_text())
    entries = []
    for i, item in enumerate(data.get("allow", [])):
        missing = {"api", "path", "reason"} - item.keys()
        if missing:
            raise ValueError(f"{path}: entry {i} lacks {', '.join(sorted(missing))}")
        entries.append(
            Entry(
                api=item["api"],
                path=item["path"],
                reason=item["reason"],
                versions=_versions(item.get("versions")),
                step=item.get("step"),
            )
        )
    for i, item in enumerate(data.get("unscripted", [])):
        missing = {"api", "reason"} - item.keys()
        if missing:
            raise ValueError(f"{path}: unscripted entry {i} lacks {', '.join(sorted(missing))}")
        entries.append(
            Entry(
                api=item["api"],
                path="*",
                reason=item["reason"],
                versions=_versions(item.get("versions")),
                unscripted=True,
            )
        )
    return entries


@dataclass(eq=False)
class FuzzEntry:
    """A class of fuzz cases that stays, each with its reason: the case's API, the kind of
    case (``why`` glob on the fuzzer's reason, e.g. ``*accepted*``) and a regular
    expression searched in the mutated request as the codec reads it."""

    api: str
    why: str
    request: str
    reason: str
    # When set, Kafka's answer must have refused with these error codes only: an entry for
    # state the two brokers do not share names the codes that state explains.
    kafka_errors: tuple[int, ...] = ()
    used: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        self._why_re = re.compile(_glob(self.why))
        self._request_re = re.compile(self.request)

    def covers(self, case: dict) -> bool:  # type: ignore[type-arg]
        return (
            case["api"] == self.api
            and bool(self._why_re.fullmatch(case["why"]))
            and bool(self._request_re.search(case.get("request", "")))
            and (not self.kafka_errors or _kafka_errors(case) <= set(self.kafka_errors))
        )


def _kafka_errors(case: dict) -> set[int]:  # type: ignore[type-arg]
    """The error codes of Kafka's answer to a saved case; {None} when it did not answer."""
    answer = case.get("kafka") or {}
    answered = answer.get("Answered") if isinstance(answer, dict) else None
    if not answered or not answered.get("errors"):
        return {None}  # type: ignore[arg-type]
    return set(answered["errors"])


def load_fuzz(path: Path = DEFAULT_PATH) -> list[FuzzEntry]:
    """The ``[[fuzz]]`` entries: fuzz cases that are deliberate differences."""
    data = tomllib.loads(path.read_text())
    entries = []
    for i, item in enumerate(data.get("fuzz", [])):
        missing = {"api", "request", "reason"} - item.keys()
        if missing:
            raise ValueError(f"{path}: fuzz entry {i} lacks {', '.join(sorted(missing))}")
        entries.append(
            FuzzEntry(
                api=item["api"],
                why=item.get("why", "*"),
                request=item["request"],
                reason=item["reason"],
                kafka_errors=tuple(item.get("kafka_errors", ())),
            )
        )
    return entries


def judge_fuzz(
    cases: list[dict],  # type: ignore[type-arg]
    entries: list[FuzzEntry],
) -> tuple[dict[FuzzEntry, int], list[dict]]:  # type: ignore[type-arg]
    """Split saved fuzz cases into listed (a count per entry) and unlisted; a crash is
    never listed."""
    listed: dict[FuzzEntry, int] = {}
    unlisted = []
    for case in cases:
        entry = None
        if "crash" not in case["why"]:
            entry = next((e for e in entries if e.covers(case)), None)
        if entry is None:
            unlisted.append(case)
        else:
            listed[entry] = listed.get(entry, 0) + 1
    return listed, unlisted
