"""Fetch kafka-python's own integration tests and run chosen ones against a kafkalite broker.

Nothing of kafka-python is vendored: the source distribution of the installed version is
downloaded with pip on first use and unpacked under ~/.cache/kafkalite (like Kafka's jars).
Their tests run in a child pytest with their own conftest and their own pytest settings;
`kafka_python_shim` supplies the harness the sdist leaves out."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _cache_base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafkalite"


def source_dir() -> Path:
    """kafka-python's unpacked sdist for the installed version, fetched on first use."""
    ver = version("kafka-python")
    home = _cache_base() / f"kafka-python-{ver}-src"
    marker = home / "unpacked"
    if marker.exists():
        return home / f"kafka_python-{ver}"
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check"]
        cmd += ["--no-deps", "--no-binary", ":all:", "-d", tmp, f"kafka-python=={ver}"]
        subprocess.run(cmd, check=True, timeout=300)
        (sdist,) = Path(tmp).glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            # The "data" filter (no links out, no device files) where Python has it (3.11.4+).
            if hasattr(tarfile, "data_filter"):
                tar.extractall(home, filter="data")
            else:
                tar.extractall(home)
    src = home / f"kafka_python-{ver}"
    if not (src / "test" / "integration" / "conftest.py").exists():
        raise RuntimeError(f"kafka-python {ver}'s sdist has no test/integration/conftest.py")
    marker.write_text(ver + "\n")
    return src


@dataclass
class Outcomes:
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    # Each test's file under their test/integration, to select it again.
    files: dict[str, str] = field(default_factory=dict)
    output: str = ""

    def selection(self, names: list[str]) -> list[str]:
        return [f"{self.files[n]}::{n}" for n in names]


def run(bootstrap: str, selection: list[str], kafka_version: str, timeout: float) -> Outcomes:
    """Run `selection` (paths relative to their `test/integration`, with `::name` or
    `::name[param]`) against the broker at `bootstrap`; the outcome of every test id."""
    src = source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        env = dict(os.environ)
        env.update(
            KAFKA_URI=f"PLAINTEXT://{bootstrap}",
            KAFKA_VERSION=kafka_version,
            # Their fixture checks that a Kafka install dir exists even for an external
            # broker; it never runs anything from it in that mode.
            KAFKA_ROOT=tmp,
            KAFKALITE_KAFKA_PYTHON_SRC=str(src),
            PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
        )
        cmd = [sys.executable, "-m", "pytest", "-p", "kafka_python_shim"]
        cmd += ["-p", "no:cacheprovider", "-c", str(src / "pyproject.toml")]
        cmd += ["--rootdir", str(src), f"--junitxml={junit}", "-q", "-rA", "-o", "log_level=INFO"]
        cmd += [str(src / "test" / "integration" / s) for s in selection]
        done = subprocess.run(
            cmd, cwd=src, env=env, capture_output=True, text=True, timeout=timeout
        )
        out = Outcomes(output=done.stdout + done.stderr)
        if not junit.exists():
            raise RuntimeError(f"their pytest wrote no report:\n{out.output}")
        for case in ET.parse(junit).getroot().iter("testcase"):
            name = case.get("name", "")
            out.files[name] = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            skip = case.find("skipped")
            if bad is not None:
                out.failed[name] = (bad.get("message") or "")[:300]
            elif skip is not None:
                out.skipped[name] = skip.get("message") or ""
            else:
                out.passed.append(name)
    return out
