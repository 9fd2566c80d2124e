"""The compatibility page, bench/results/peers/README.md, rendered from the suites' result
files (never edited by hand: `python -m bench.peers page` rewrites it, and every suite run
does too)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.peers.common import BROKERS, FAIL, PASS, RESULTS, SKIP, Outcome, compare, runs_of

ORDER = ["franz-go", "aiokafka", "kafka-python", "quixstreams", "librdkafka", "librdkafka-cluster"]

HEADER = """# Other projects' test suites against kafkalite and Apache Kafka

Each suite is fetched the way its ecosystem ships it, pinned, built, and run unchanged
(except for the fixture patch named below, which only points it at an external broker)
against each broker started with the same settings. Rendered from `*.json` here by the
commands below; do not edit by hand. `python -m bench.peers --help` (from the checkout's
root) lists the suites.

Verdicts compare every broker a suite ran against: *passed on all*, *failed on all*,
*skipped on all* (the suite's own skips: a feature the broker lacks, or a test the suite
runs only elsewhere), and *differs*, with each broker's failure lines.
"""


# Suites the issue asked for that no command here runs yet, and why.
NOT_RUN = {
    "aiokafka 0.14.0": "its PyPI sdist and wheel carry no tests/ (the package only), and no "
    "other reachable registry (PyPI, npm, crates.io, Maven Central, the Go module proxy, "
    "Debian) ships them",
    "Quix Streams 3.25.0": "PyPI has only wheels of it (no sdist), without its tests",
}


def _cell(o: Outcome | None) -> str:
    return "not run" if o is None else o.outcome


def _lines(o: Outcome | None) -> str:
    """A failure's first lines, each on one line and at most 300 characters."""
    if o is None or not o.lines:
        return ""
    return "<br>".join(
        " ".join(line.split())[:300].replace("|", "\\|").replace("`", "'") for line in o.lines[:6]
    )


def suite_section(name: str, data: dict) -> str:
    runs = runs_of(data)
    kinds = [k for k in BROKERS if k in runs]
    out = [f"## {name} {data.get('version', '')}", ""]
    out.append(f"Source: {data.get('source', '?')}.  ")
    patch = data.get("patch")
    out.append(f"Fixture patch: `{patch}`." if patch else "Fixture patch: none.")
    out.append("")
    out.append(f"Command: `{data.get('command', '?')}`")
    out.append("")
    out.append("| broker | date | passed | failed | skipped | time |")
    out.append("|---|---|---|---|---|---|")
    for kind in kinds:
        run = data["runs"][kind]
        c = run["counts"]
        out.append(
            f"| {run['broker']} | {run['date']} | {c[PASS]} | {c[FAIL]} | {c[SKIP]} "
            f"| {run['duration_s']} s |"
        )
    out.append("")
    out.append("<details><summary>Broker settings</summary>")
    out.append("")
    for kind in kinds:
        keys = data["runs"][kind].get("settings", {})
        listed = ", ".join(f"`{k}={v}`" for k, v in sorted(keys.items()))
        out.append(f"- {data['runs'][kind]['broker']}: {listed or 'defaults'}")
    out.append("")
    out.append("</details>")
    out.append("")
    verdicts = compare(runs)
    summary = ", ".join(f"{len(v)} {k}" for k, v in verdicts.items())
    out.append(f"Tests: {summary}.")
    out.append("")
    for verdict in ("differs", "failed on all"):
        names = verdicts[verdict]
        if not names:
            continue
        out.append(f"### {verdict.capitalize()}")
        out.append("")
        out.append("| test | " + " | ".join(kinds) + " | failure (or skip, or checked) lines |")
        out.append("|---|" + "---|" * len(kinds) + "---|")
        for test in names:
            cells = [_cell(runs[k].get(test)) for k in kinds]
            why = "<br>".join(
                f"**{k}**: {_lines(runs[k].get(test))}"
                for k in kinds
                if runs[k].get(test) is not None and runs[k][test].lines
            )
            out.append(f"| {test} | " + " | ".join(cells) + f" | {why} |")
        out.append("")
    evidence = [
        (test, k, runs[k][test].lines)
        for test in verdicts["passed on all"]
        for k in kinds
        if runs[k][test].lines
    ]
    if evidence:
        out.append("### Passed, with what the harness checked")
        out.append("")
        out.append("| test | broker | lines |")
        out.append("|---|---|---|")
        for test, k, lines in evidence:
            out.append(f"| {test} | {k} | {_lines(Outcome(PASS, lines))} |")
        out.append("")
    for verdict in ("skipped on all", "passed on all"):
        names = verdicts[verdict]
        if names:
            out.append(f"<details><summary>{len(names)} {verdict}</summary>")
            out.append("")
            out.append(", ".join(names))
            out.append("")
            out.append("</details>")
            out.append("")
    return "\n".join(out)


def render(results: Path = RESULTS) -> Path:
    files = {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}
    names = [n for n in ORDER if n in files] + sorted(n for n in files if n not in ORDER)
    parts = [HEADER]
    parts.append("| suite | version | " + " | ".join(BROKERS.values()) + " |")
    parts.append("|---|---|" + "---|" * len(BROKERS))
    for name in names:
        data = files[name]
        cells = []
        for kind in BROKERS:
            run = data.get("runs", {}).get(kind)
            cells.append(
                "—"
                if run is None
                else f"{run['counts'][PASS]} passed, {run['counts'][FAIL]} failed, "
                f"{run['counts'][SKIP]} skipped"
            )
        parts.append(
            f"| [{name}](#{name}-{_anchor(data.get('version', ''))}) "
            f"| {data.get('version', '')} | " + " | ".join(cells) + " |"
        )
    parts.append("")
    parts.append("Not run yet:")
    parts.append("")
    parts += [f"- {suite}: {why}." for suite, why in NOT_RUN.items()]
    parts.append("")
    for name in names:
        parts.append(suite_section(name, files[name]))
    results.mkdir(parents=True, exist_ok=True)
    page = results / "README.md"
    page.write_text("\n".join(parts).rstrip() + "\n")
    return page


def _anchor(version: str) -> str:
    return "".join(ch for ch in version.lower() if ch.isalnum() or ch == "-")
