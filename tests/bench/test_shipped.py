"""Workloads and hardware profiles ship as package data: every one loads by NAME from the
installed package, from any working directory, and a path to a file is still accepted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yaml", reason="pip install '.[bench]'")

import kafkalite.bench
from kafkalite.bench.profiles import PROFILE_DIR, ProfileError, available_profiles, load_profile
from kafkalite.bench.shipped import find
from kafkalite.bench.workload import (
    WORKLOAD_DIR,
    WorkloadError,
    available_workloads,
    load_workload,
)

PACKAGE = Path(kafkalite.bench.__file__).resolve().parent
CHECKOUT = Path(__file__).resolve().parents[2]

# Loaded in a fresh interpreter whose working directory holds nothing of the checkout:
# only the installed package can answer.
LOAD_ALL_BY_NAME = """
import json
from kafkalite.bench.profiles import available_profiles, load_profile
from kafkalite.bench.workload import available_workloads, load_workload
print(json.dumps({
    "profiles": {n: load_profile(n).description for n in available_profiles()},
    "workloads": {n: load_workload(n).as_dict() for n in available_workloads()},
}))
"""


def test_shipped_dirs_are_inside_the_package() -> None:
    assert Path(str(PROFILE_DIR)).resolve() == PACKAGE / "hw_profiles"
    assert Path(str(WORKLOAD_DIR)).resolve() == PACKAGE / "workloads"
    assert {"nvme-ssd", "sata-ssd", "hdd-7200", "nic-1g", "nic-10g", "nic-25g"} <= set(
        available_profiles()
    )
    assert {"max-throughput-1kb", "max-throughput-100b", "acks-all-1kb", "tiny"} <= set(
        available_workloads()
    )


def test_every_shipped_file_loads_by_name_from_an_empty_directory(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD_ALL_BY_NAME],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout)
    assert sorted(loaded["profiles"]) == available_profiles()
    assert sorted(loaded["workloads"]) == available_workloads()
    for name, workload in loaded["workloads"].items():
        assert workload["name"] == name
    assert loaded["workloads"]["max-throughput-1kb"]["messageSize"] == 1024
    assert loaded["profiles"]["nvme-ssd"].startswith("NVMe SSD")


@pytest.mark.parametrize("name", available_profiles())
def test_profile_by_name_is_the_package_file(name: str) -> None:
    entry = find(name, PROFILE_DIR, ".toml")
    assert entry is not None and Path(str(entry)).resolve().parent == PACKAGE / "hw_profiles"
    by_name, by_path = load_profile(name), load_profile(str(entry))
    assert (by_name.disk, by_name.net) == (by_path.disk, by_path.net)


@pytest.mark.parametrize("name", available_workloads())
def test_workload_by_name_is_the_package_file(name: str) -> None:
    entry = find(name, WORKLOAD_DIR, ".yaml")
    assert entry is not None and Path(str(entry)).resolve().parent == PACKAGE / "workloads"
    assert load_workload(name) == load_workload(str(entry))


def test_unknown_names_list_the_shipped_ones() -> None:
    with pytest.raises(WorkloadError) as e:
        load_workload("max-throughput-1tb")
    assert "'max-throughput-1tb'" in str(e.value) and "max-throughput-1kb" in str(e.value)
    with pytest.raises(ProfileError, match="nvme-ssd"):
        load_profile("floppy")


def test_a_file_of_the_users_still_wins(tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text("messageSize: 300\ntestDurationSeconds: 5\nwarmupSeconds: 1\n")
    assert load_workload(str(own)).message_size == 300
    # A relative path without the suffix, from the working directory, is a file too.
    plain = tmp_path / "tiny"
    plain.write_text("messageSize: 7\ntestDurationSeconds: 5\nwarmupSeconds: 1\n")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kafkalite.bench.workload import load_workload; "
            "print(load_workload('tiny').message_size)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "7"
    profile = tmp_path / "slow.toml"
    profile.write_text("[disk]\nwrite_bytes_per_s = 1000\n")
    assert load_profile(str(profile)).disk.write_bytes_per_s == 1000


def test_bench_list_prints_every_shipped_name(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafkalite.bench", "list"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert listed == set(available_profiles()) | set(available_workloads())


@pytest.mark.skipif(not (CHECKOUT / "hw_profiles").exists(), reason="not a checkout")
def test_the_checkout_dirs_are_the_package_files() -> None:
    # One copy in git: the root hw_profiles/ and bench/workloads/ lead to the package's.
    source = CHECKOUT / "python" / "kafkalite" / "bench"
    assert (CHECKOUT / "hw_profiles").resolve() == source / "hw_profiles"
    assert (CHECKOUT / "bench" / "workloads").resolve() == source / "workloads"
