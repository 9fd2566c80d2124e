"""bench/soak.py, short: 40 s of mixed load with /proc sampling, then every limit probe
scaled down (300 idle connections, slow senders cut by a 3 s idle limit, clients that never
read, two 10 MB fetches at once). The broker must serve a produce during each probe and
still be alive after it. The 30-minute run's figures are in bench/results/soak."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_short_soak_and_limits(tmp_path: Path) -> None:
    out = tmp_path / "soak"
    args = ["--minutes", "0.67", "--rate", "500", "--idle", "300", "--hold-s", "2"]
    args += ["--idle-ms", "3000", "--fetchers", "2", "--fetch-mb", "10"]
    args += ["--out", str(out), "--data", str(tmp_path / "data")]
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])["soak"]
    load = result["load"]
    assert load["produced"] > 5000 and load["consumed"] > 0, load
    assert load.get("groups", 0) > 0 and load.get("topics", 0) > 0, load
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) >= 4 and all(s["rss_mb"] > 0 and s["fds"] > 0 for s in samples)
    assert (out / "soak.png").stat().st_size > 10_000
    limits = result["limits"]
    assert all(p["broker_alive"] for p in limits.values()), limits
    for name in ("idle_connections", "slow_clients", "never_read", "big_fetch"):
        key = "produce_ms_while_held" if name == "idle_connections" else "produce_ms_meanwhile"
        assert limits[name][key] is not None, (name, limits[name])
    assert limits["idle_connections"]["opened"] == 300, limits["idle_connections"]
    # A started frame must be whole within connections.max.idle.ms (3 s here).
    assert limits["slow_clients"]["closed_by_broker"] == 200, limits["slow_clients"]
    assert limits["big_fetch"]["read_all"] == 2, limits["big_fetch"]
