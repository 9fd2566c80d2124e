"""Read a broker's metrics endpoint: the Prometheus text format into (name, labels) ->
value, which is all `kafkalite top` and the tests need."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Mapping

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def endpoint_url(address: tuple[str, int] | None) -> str | None:
    """The scrape URL of a broker's metrics address (``metrics.listen``), if it serves one."""
    if address is None:
        return None
    host, port = address
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"


def parse(text: str) -> Samples:
    out: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        name, labels, value = m.groups()
        pairs = tuple(
            sorted(
                (k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
                for k, v in _LABEL.findall(labels or "")
            )
        )
        out[(name, pairs)] = float(value)
    return out


def fetch(url: str, timeout: float = 5.0) -> Samples:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return parse(response.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The sample of `name` whose labels are exactly `labels`."""
    return samples.get((name, tuple(sorted(labels.items()))))


def by_label(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """Every sample of `name` that has all of `keys`, keyed by those labels' values."""
    out = {}
    for (n, labels), v in samples.items():
        if n != name:
            continue
        d: Mapping[str, str] = dict(labels)
        if all(k in d for k in keys):
            out[tuple(d[k] for k in keys)] = v
    return out
