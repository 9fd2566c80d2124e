"""The latency histogram: percentiles within 0.1 %, merging, JSON, coordinated omission."""

from __future__ import annotations

import math
import random

import pytest

from kafkalite.bench.histogram import Histogram


def exact_percentile(values: list[float], pct: float) -> float:
    s = sorted(values)
    return s[max(0, math.ceil(len(s) * pct / 100) - 1)]


def test_percentiles_within_a_tenth_of_a_percent_and_never_low() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(8, 1.5) for _ in range(50_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    for pct in (50, 90, 99, 99.9):
        exact = exact_percentile([max(v, 1.0) for v in values], pct)
        got = h.percentile_us(pct)
        assert exact <= got <= exact * 1.00101, (pct, exact, got)
    assert h.percentile_us(100) == pytest.approx(max(values))
    assert h.total == len(values)


def test_merge_and_json_round_trip() -> None:
    a, b = Histogram(), Histogram()
    for v in range(1, 1001):
        (a if v % 2 else b).record(v)
    merged = Histogram.merged([Histogram.from_json(a.to_json()), Histogram.from_json(b.to_json())])
    assert merged.total == 1000
    assert merged.max_us == 1000 and merged.min_us == 1
    assert 500 <= merged.percentile_us(50) <= 505
    s = merged.summary_ms()
    assert s["count"] == 1000 and s["max_ms"] == 1.0


def test_empty_histogram() -> None:
    h = Histogram()
    assert math.isnan(h.percentile_us(99))
    assert math.isnan(h.summary_ms()["p99_ms"])


def test_coordinated_omission_correction_backfills_stalled_sends() -> None:
    # One 100 ms stall at a 10 ms send interval: the 9 sends that should have gone out
    # during the stall waited 90, 80, ..., 10 ms.
    h = Histogram()
    h.record_corrected(100_000, 10_000)
    assert h.total == 10
    assert h.percentile_us(100) == 100_000
    assert 10_000 <= h.min_us <= 10_100
    # Without a stall nothing is added.
    h2 = Histogram()
    h2.record_corrected(5_000, 10_000)
    assert h2.total == 1


def test_intended_time_measurement_sees_the_stall() -> None:
    """What the fixed-rate driver does: latency = ack time - intended send time. A stall
    at send i delays every send queued behind it; all of them carry the wait."""
    interval, stall_at, stall = 0.01, 10, 0.1
    h_naive, h_intended = Histogram(), Histogram()
    clock = 0.0
    for i in range(100):
        intended = i * interval
        clock = max(clock, intended)
        if i == stall_at:
            clock += stall  # the broker stalls; the sender is blocked meanwhile
        service = 0.001
        ack = clock + service
        h_naive.record((ack - clock) * 1e6)  # from the actual send: hides the stall
        h_intended.record((ack - intended) * 1e6)
        clock = ack
    assert h_naive.percentile_us(99) < 1_100
    assert h_intended.percentile_us(99) >= 90_000


def test_reads_histograms_written_with_a_coarser_growth() -> None:
    # Results committed before the histogram went to 0.1 % buckets used 1 % ones.
    old = {"growth": 1.01, "counts": {"694": 10, "926": 90}, "total": 100, "sum_us": 0.0,
           "max_us": 10_040.0, "min_us": 990.0}  # fmt: skip
    h = Histogram.from_json(old)
    assert h.total == 100
    assert h.percentile_us(5) == pytest.approx(1.01**694, rel=0.002)
    assert h.percentile_us(50) == pytest.approx(1.01**926, rel=0.002)
    with pytest.raises(ValueError, match="growth"):
        Histogram.from_json({**old, "growth": 1.0})
