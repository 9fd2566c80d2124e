"""Hardware profile TOML: every shipped profile parses; bad input names the bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.bench.profiles import PROFILE_DIR, ProfileError, available_profiles, load_profile


def test_shipped_profiles() -> None:
    names = set(available_profiles())
    assert {"nvme-ssd", "sata-ssd", "hdd-7200", "nic-1g", "nic-10g", "nic-25g"} <= names
    for name in names:
        p = load_profile(name)
        assert p.disk is not None or p.net is not None
    assert load_profile("sata-ssd").disk.write_bytes_per_s == 500_000_000
    assert load_profile("nic-1g").net.rate_mbit == 1000


def test_combination_by_plus() -> None:
    p = load_profile("hdd-7200+nic-10g")
    assert p.disk is not None and p.disk.write_iops == 150
    assert p.net is not None and p.net.rate_mbit == 10000
    with pytest.raises(ProfileError, match="more than one part sets"):
        load_profile("hdd-7200+sata-ssd")


def test_unknown_profile_lists_the_available_ones() -> None:
    with pytest.raises(ProfileError) as e:
        load_profile("floppy")
    assert "'floppy'" in str(e.value) and "nvme-ssd" in str(e.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[disk]\nwrite_bytes_per_s = -1\n", "write_bytes_per_s = -1"),
        ("[disk]\nwrite_mbps = 5\n", "unknown key 'write_mbps' in [disk]"),
        ("[network]\nrate_mbit = 'fast'\n", "rate_mbit = 'fast'"),
        ("name = 'x'\n", "needs a [disk] or a [network]"),
        ("speed = 1\n", "unknown key 'speed'"),
        ("[disk\n", "not valid TOML"),
    ],
)
def test_bad_profiles(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profile(str(path))
    assert needle in str(e.value)


def test_profile_dir_is_the_package_one() -> None:
    assert PROFILE_DIR.name == "hw_profiles" and (PROFILE_DIR / "nvme-ssd.toml").is_file()
