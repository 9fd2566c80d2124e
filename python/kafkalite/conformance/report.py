"""The conformance report: per API and version the requests played, fields compared and
differences (with both values), the allowlist's use, and a JSON last line."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TextIO

from kafkalite.conformance.allowlist import Entry


@dataclass
class Outcome:
    data: dict[str, Any]
    unlisted: list[dict[str, Any]] = field(default_factory=list)
    allowed: list[tuple[dict[str, Any], Entry]] = field(default_factory=list)
    stale: list[Entry] = field(default_factory=list)
    bad_ranges: list[dict[str, Any]] = field(default_factory=list)
    #: Advertised versions no script plays: excused by an unscripted entry, or not.
    pending: list[tuple[str, Entry]] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unlisted or self.stale or self.bad_ranges or self.uncovered)

    def summary(self) -> dict[str, Any]:
        exchanges = self.data["exchanges"]
        return {
            "apis": len({e["api"] for e in exchanges}),
            "versions": len({(e["api"], e["version"]) for e in exchanges}),
            "requests": len(exchanges),
            "fields": sum(e["fields"] for e in exchanges),
            "differences": len(self.unlisted),
            "allowed": len(self.allowed),
            "stale_allowlist": len(self.stale),
            "uncovered": len(self.uncovered),
            "unscripted": len(self.pending),
            "ranges_failed": len(self.bad_ranges),
            "seconds": round(self.data["seconds"], 1),
            "ok": self.ok,
        }


def judge(data: dict[str, Any], entries: list[Entry]) -> Outcome:
    """Split differences into allowed and unlisted; find stale entries and bad ranges."""
    out = Outcome(data)
    for entry in entries:
        entry.used = 0
    for exchange in data["exchanges"]:
        for diff in exchange["differences"]:
            item = {**diff, **{k: exchange[k] for k in ("api", "version", "script", "step")}}
            entry = next(
                (
                    e
                    for e in entries
                    if e.covers(
                        exchange["api"], exchange["version"], exchange["step"], diff["path"]
                    )
                ),
                None,
            )
            if entry is None:
                out.unlisted.append(item)
            else:
                entry.used += 1
                out.allowed.append((item, entry))
    for item in data["uncovered"]:
        api, _, version = item.rpartition(" v")
        entry = next((e for e in entries if e.unscripted and e.applies_to(api, int(version))), None)
        if entry is None:
            out.uncovered.append(item)
        else:
            entry.used += 1
            out.pending.append((item, entry))
    played = {(e["api"], e["version"]) for e in data["exchanges"]}
    for entry in entries:
        relevant = any(entry.applies_to(api, v) for api, v in played)
        if relevant and entry.used == 0:
            out.stale.append(entry)
    unscripted = {e.api for e in entries if e.unscripted}
    out.bad_ranges = [
        r
        for r in data["ranges"]
        if r["status"] == "wider" or (r["status"] == "not in kafka" and r["api"] not in unscripted)
    ]
    return out


def _value(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + f"...({len(text)} chars)"


def write(out: Outcome, stream: TextIO, verbose: bool = False) -> None:
    per: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for e in out.data["exchanges"]:
        row = per[(e["api"], e["version"])]
        row[0] += 1
        row[1] += e["fields"]
    for item in out.unlisted:
        per[(item["api"], item["version"])][2] += 1
    for item, _ in out.allowed:
        per[(item["api"], item["version"])][3] += 1
    row = "{:<26}{:>8}{:>10}{:>8}{:>7}{:>9}\n"
    stream.write(row.format("API", "VERSION", "REQUESTS", "FIELDS", "DIFFS", "ALLOWED"))
    for (api, version), (requests, fields, diffs, allowed) in sorted(per.items()):
        stream.write(row.format(api, f"v{version}", requests, fields, diffs, allowed))
    narrower = [r for r in out.data["ranges"] if r["status"] == "narrower"]
    if narrower:
        stream.write("\nApiVersions: kafkalite advertises a narrower range than Kafka (listed):\n")
        for r in narrower:
            stream.write(f"  {r['api']}: kafkalite {r['kafkalite']} kafka {r['kafka']}\n")
    for r in out.bad_ranges:
        stream.write(
            f"\nApiVersions FAIL: {r['api']} kafkalite {r['kafkalite']} "
            f"kafka {r['kafka']} ({r['status']})\n"
        )
    if out.unlisted:
        stream.write("\ndifferences (kafkalite vs kafka):\n")
        for d in out.unlisted:
            stream.write(
                f"  {d['api']} v{d['version']} [{d['script']}: {d['step']}] {d['path']}\n"
                f"      kafkalite: {_value(d['kafkalite'])}\n"
                f"      kafka:     {_value(d['kafka'])}\n"
            )
    if verbose and out.allowed:
        stream.write("\nallowed differences:\n")
        for d, entry in out.allowed:
            stream.write(
                f"  {d['api']} v{d['version']} [{d['step']}] {d['path']}: "
                f"{_value(d['kafkalite'], 60)} vs {_value(d['kafka'], 60)} ({entry.reason})\n"
            )
    for entry in out.stale:
        stream.write(f"\nstale allowlist entry (matched nothing): {entry.describe()}\n")
    for item in out.uncovered:
        stream.write(f"\nuncovered: {item} is advertised but no script plays it\n")
    if out.pending:
        stream.write("\nunscripted (advertised, no script yet; listed in the allowlist):\n")
        for item, entry in out.pending:
            stream.write(f"  {item}: {entry.reason}\n")
    stream.write(json.dumps(out.summary()) + "\n")
