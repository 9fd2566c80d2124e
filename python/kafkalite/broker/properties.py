"""Kafka's ``server.properties`` format, and the broker settings built from it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (an odd number of trailing backslashes) as Java does."""
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw
        if not pending and (not line.strip() or line.lstrip()[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text: ``key=value``, ``key: value`` or ``key value``."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        line = line.strip()
        i = 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=: \t":
                break
            i += 1
        key, rest = line[:i], line[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        result[_unescape(key)] = _unescape(rest)
    return result


def default_log_dir() -> Path:
    """Where a broker started with no configuration keeps its data."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kafkalite" / "logs"


def broker_settings(
    config_file: str | Path | None = None,
    overrides: Mapping[str, str] | None = None,
    listeners: str | None = None,
    log_dirs: str | None = None,
) -> dict[str, str]:
    """Settings in the order Kafka applies them: defaults, the file, --override, flags."""
    settings = {"listeners": DEFAULT_LISTENERS, "log.dirs": str(default_log_dir())}
    if config_file is not None:
        settings.update(parse_properties(Path(config_file).read_text()))
    settings.update(overrides or {})
    if listeners:
        settings["listeners"] = listeners
    if log_dirs:
        settings["log.dirs"] = log_dirs
    return settings
