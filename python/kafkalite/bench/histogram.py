"""A log-bucketed latency histogram with 0.1 % relative precision (what HdrHistogram gives
with 3 significant digits, the setting latency benchmarks such as OpenMessaging use).

Own code rather than a dependency: workers record into it in a hot callback, send it to the
harness as JSON and the harness merges them, which needs nothing but a dict of counts.
Values are microseconds; a bucket's reported value is its upper edge, so percentiles err
high by at most 0.1 %, never low. Histograms written with a coarser growth (older results)
are read by moving each bucket's edge into this one's buckets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

# Bucket i covers (GROWTH**(i-1), GROWTH**i] microseconds.
GROWTH = 1.001
_LOG_GROWTH = math.log(GROWTH)
MAX_US = 3_600 * 1_000_000  # anything longer than an hour is clamped (and still counted)


class Histogram:
    __slots__ = ("counts", "max_us", "min_us", "sum_us", "total")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.total = 0
        self.sum_us = 0.0
        self.max_us = 0.0
        self.min_us = math.inf

    def record(self, value_us: float, count: int = 1) -> None:
        v = min(max(value_us, 1.0), MAX_US)
        i = math.ceil(math.log(v) / _LOG_GROWTH - 1e-9)
        self.counts[i] = self.counts.get(i, 0) + count
        self.total += count
        self.sum_us += v * count
        if v > self.max_us:
            self.max_us = v
        if v < self.min_us:
            self.min_us = v

    def record_corrected(self, value_us: float, expected_interval_us: float) -> None:
        """HdrHistogram's correction for coordinated omission: when one sample stalled for
        longer than the send interval, the sends that should have happened meanwhile would
        have waited too; record them with linearly decreasing latencies. Only for loops that
        measure from the actual send time; the fixed-rate driver measures from the intended
        send time instead, which needs no correction."""
        self.record(value_us)
        if expected_interval_us <= 0:
            return
        missing = value_us - expected_interval_us
        # Bounded: at most 100,000 synthetic samples per stall.
        steps = 0
        while missing >= expected_interval_us and steps < 100_000:
            self.record(missing)
            missing -= expected_interval_us
            steps += 1

    def merge(self, other: Histogram) -> Histogram:
        for i, c in other.counts.items():
            self.counts[i] = self.counts.get(i, 0) + c
        self.total += other.total
        self.sum_us += other.sum_us
        self.max_us = max(self.max_us, other.max_us)
        self.min_us = min(self.min_us, other.min_us)
        return self

    def percentile_us(self, pct: float) -> float:
        """The smallest bucket edge with at least pct % of samples at or below it (max for 100)."""
        if self.total == 0:
            return math.nan
        if pct >= 100:
            return self.max_us
        rank = max(1, math.ceil(self.total * pct / 100))
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= rank:
                return min(GROWTH**i, self.max_us)
        return self.max_us

    @property
    def mean_us(self) -> float:
        return self.sum_us / self.total if self.total else math.nan

    def summary_ms(self) -> dict[str, float]:
        """p50/p95/p99/p99.9/max and mean in milliseconds, as the reports print them."""

        def ms(us: float) -> float:
            return round(us / 1000, 3) if not math.isnan(us) else math.nan

        return {
            "count": self.total,
            "avg_ms": ms(self.mean_us),
            "p50_ms": ms(self.percentile_us(50)),
            "p95_ms": ms(self.percentile_us(95)),
            "p99_ms": ms(self.percentile_us(99)),
            "p999_ms": ms(self.percentile_us(99.9)),
            "max_ms": ms(self.max_us) if self.total else math.nan,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "growth": GROWTH,
            "counts": {str(k): v for k, v in self.counts.items()},
            "total": self.total,
            "sum_us": self.sum_us,
            "max_us": self.max_us,
            "min_us": self.min_us if self.total else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Histogram:
        growth = float(data.get("growth", 0))
        if growth <= 1:
            raise ValueError(f"histogram growth {data.get('growth')!r} is not above 1")
        h = cls()
        if growth == GROWTH:
            h.counts = {int(k): int(v) for k, v in data["counts"].items()}
        else:
            for k, v in data["counts"].items():
                upper = growth ** int(k)
                i = math.ceil(math.log(max(upper, 1.0)) / _LOG_GROWTH - 1e-9)
                h.counts[i] = h.counts.get(i, 0) + int(v)
        h.total = int(data["total"])
        h.sum_us = float(data["sum_us"])
        h.max_us = float(data["max_us"])
        h.min_us = float(data["min_us"]) if data.get("min_us") is not None else math.inf
        return h

    @classmethod
    def merged(cls, parts: Iterable[Histogram]) -> Histogram:
        h = cls()
        for p in parts:
            h.merge(p)
        return h
