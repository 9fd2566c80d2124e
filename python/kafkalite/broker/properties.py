"""Kafka's ``server.properties`` format and the broker settings built from it; every key,
value and listener is validated by the Rust config schema (through ``_core``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from kafkalite import _core
from kafkalite.errors import InvalidConfigError

DEFAULT_LISTENERS = _core.broker_config_default("listeners") or ""

# java.util.Properties: these escapes map to control characters; any other escaped
# character stands for itself (so "\=" is "=", "\\" is "\").
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
# Java's LineReader treats only space, tab and form feed as whitespace, and only \n, \r and
# \r\n as line ends (str.splitlines would also split on \v, \x1c, U+2028, ...).
_WHITESPACE = " \t\f"
_LINE_END = re.compile(r"\r\n|\r|\n")


def config_error(key: str, value: str, reason: str) -> InvalidConfigError:
    """Kafka's wording (its ConfigException), as the Rust validation words it too."""
    return InvalidConfigError(f"Invalid value {value} for configuration {key}: {reason}")


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (an odd number of trailing backslashes) as Java does."""
    pending: str | None = None
    for raw in _LINE_END.split(text):
        line = raw.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            # Comments never continue, even with a trailing backslash.
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                digits = text[i + 2 : i + 6]
                if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                    raise ValueError(f"malformed \\uxxxx escape in {text!r}")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text: ``key=value``, ``key: value`` or ``key value``; comments
    start with ``#`` or ``!``; a trailing backslash continues the line. Later keys win."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=:" or line[i] in _WHITESPACE:
                break
            i += 1
        key, rest = line[:i], line[i:].lstrip(_WHITESPACE)
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(_WHITESPACE)
        result[_unescape(key)] = _unescape(rest)
    return result


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file. Kafka reads ISO-8859-1; UTF-8 is tried first because that is
    what editors write today, and the two agree on ASCII."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    try:
        return parse_properties(text)
    except ValueError as e:
        raise InvalidConfigError(f"{path}: {e}") from None


def default_log_dir() -> Path:
    """Where a broker started with no configuration keeps its data."""
    base = os.environ.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    if not base or not os.path.isabs(base):
        base = str(Path.home() / ".local" / "share")
    return Path(base) / "kafkalite" / "logs"


def broker_settings(
    config_file: str | Path | None = None,
    overrides: Mapping[str, str] | None = None,
    listeners: str | None = None,
    log_dirs: str | None = None,
) -> dict[str, str]:
    """Settings in the order Kafka applies them: defaults, the file, --override, flags."""
    settings: dict[str, str] = {}
    if config_file is not None:
        settings.update(read_properties(config_file))
    settings.update(overrides or {})
    if listeners:
        settings["listeners"] = listeners
    if log_dirs:
        settings["log.dirs"] = log_dirs
    settings.setdefault("listeners", DEFAULT_LISTENERS)
    # Kafka reads log.dirs and falls back to log.dir; the default applies only when neither
    # is given, and a lone log.dir is renamed so there is one key to read.
    if "log.dirs" not in settings:
        settings["log.dirs"] = settings.pop("log.dir", "") or str(default_log_dir())
    else:
        settings.pop("log.dir", None)
    return settings


# ---- checks beyond the Rust parser -------------------------------------------------------


def validate_settings(settings: Mapping[str, str]) -> list[str]:
    """Check every key against the config schema in ``_core`` (types, bounds, synonyms,
    listeners we cannot serve and addresses no client can reach), and data dirs that are
    files. Raises InvalidConfigError naming the key and value; returns one warning per key
    the schema does not know (Kafka ignores those, and says so)."""
    warnings = _core.validate_broker_config(dict(settings))

    for key in ("log.dirs", "log.dir"):
        if key in settings:
            for d in (d.strip() for d in settings[key].split(",")):
                if d and os.path.exists(d) and not os.path.isdir(d):
                    raise config_error(key, settings[key], f"{d} is not a directory")
    return warnings
