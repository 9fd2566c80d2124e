"""Python suites: the pinned sdist from PyPI (`pip download --no-binary :all:`), unpacked
into the cache, installed with its test extras into a virtualenv of its own (the suite's
pins, not kafkalite's), and run with pytest; outcomes read from pytest's JUnit XML."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from bench.peers.common import (
    FAIL,
    FAILURE_LINES_MAX,
    PASS,
    SKIP,
    Outcome,
    SuiteError,
    apply_patch,
    cache_dir,
)
from bench.peers.common import run as run_step


@dataclass
class PySuite:
    """One Python suite: its PyPI name and version, what to install beside it, which test
    paths to run, and the environment that points its fixtures at a broker."""

    name: str
    dist: str
    version: str
    extras: str
    paths: list[str]
    env: dict[str, str] = field(default_factory=dict)
    pytest_args: list[str] = field(default_factory=list)
    patch: Path | None = None

    @property
    def home(self) -> Path:
        return cache_dir(f"{self.name}-{self.version}")

    def fetch(self) -> Path:
        """The unpacked sdist (patched, if the suite has a patch)."""
        src = self.home / "src"
        if not (src / "pyproject.toml").exists() and not (src / "setup.py").exists():
            downloads = self.home / "sdist"
            shutil.rmtree(downloads, ignore_errors=True)
            run_step(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    f"{self.dist}=={self.version}",
                    "-d",
                    str(downloads),
                ],
                timeout=600,
            )
            (sdist,) = downloads.glob("*.tar.gz")
            partial = self.home / "src.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            with tarfile.open(sdist) as tar:
                tar.extractall(partial, filter="data")
            (top,) = partial.iterdir()
            top.rename(src)
            shutil.rmtree(partial)
        self.patch = apply_patch(self.name, src)
        return src

    def build(self) -> Path:
        """A virtualenv with the suite installed from its sdist, with its test extras."""
        src = self.fetch()
        venv = self.home / "venv"
        python = venv / "bin" / "python"
        marker = venv / ".installed"
        if not marker.exists():
            shutil.rmtree(venv, ignore_errors=True)
            run_step([sys.executable, "-m", "venv", str(venv)])
            run_step([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
            run_step(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    f"{src}[{self.extras}]" if self.extras else str(src),
                    "pytest-timeout",
                ],
                timeout=1200,
            )
            marker.write_text(f"{self.dist}=={self.version}\n")
        return python

    def run(self, bootstrap: str, log: Path, select: str | None = None) -> dict[str, Outcome]:
        python = self.build()
        src = self.home / "src"
        junit = log.with_suffix(".xml")
        junit.unlink(missing_ok=True)  # an interrupted run writes none: never read an old one
        env = {
            **os.environ,
            **{k: v.format(bootstrap=bootstrap, home=self.home) for k, v in self.env.items()},
        }
        cmd = [
            str(python),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",
            "-rN",
            f"--junitxml={junit}",
            *self.pytest_args,
            *self.paths,
        ]
        if select:
            cmd += ["-k", select]
        with log.open("w") as out:
            subprocess.run(cmd, cwd=src, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
        if not junit.exists():
            raise SuiteError(f"{self.name}: pytest wrote no results; see {log}")
        return parse_junit(junit.read_text())


def parse_junit(text: str) -> dict[str, Outcome]:
    """Each test case's outcome (`path::Class::name`); a test's error in setup or teardown
    counts as its failure."""
    results: dict[str, Outcome] = {}
    for case in ET.fromstring(text).iter("testcase"):
        classname = case.get("classname", "")
        name = f"{classname.replace('.', '/')}.py::{case.get('name')}"
        bad = [e for e in case if e.tag in ("failure", "error")]
        skipped = [e for e in case if e.tag == "skipped"]
        if bad:
            lines = []
            for e in bad:
                lines.append(e.get("message", "").strip())
                lines += [
                    line.strip() for line in (e.text or "").splitlines() if line.startswith("E ")
                ]
            results[name] = Outcome(FAIL, [line for line in lines if line][:FAILURE_LINES_MAX])
        elif skipped:
            results[name] = Outcome(SKIP, [skipped[0].get("message", "").strip()])
        elif name in results and results[name].outcome == FAIL:
            continue  # a teardown error reported after the call's pass
        else:
            results[name] = Outcome(PASS)
    return results


KAFKA_PYTHON = PySuite(
    name="kafka-python",
    dist="kafka-python",
    version="3.0.12",
    extras="testing",
    # Its SASL and SSL tests need listeners its fixture configures only on a broker it
    # starts itself (they wait out their timeouts against an external plaintext one).
    paths=[
        "test/integration/test_admin_integration.py",
        "test/integration/test_consumer_integration.py",
        "test/integration/test_producer_integration.py",
    ],
    # Its fixtures use an external broker when KAFKA_URI names one; KAFKA_VERSION gates
    # tests by broker version (both brokers speak Kafka 4's protocol versions); KAFKA_ROOT
    # must be a directory (where it would find a Kafka download: unused with KAFKA_URI).
    env={
        "KAFKA_URI": "PLAINTEXT://{bootstrap}",
        "KAFKA_VERSION": "4.4.0",
        "KAFKA_ROOT": "{home}",
    },
    pytest_args=["-o", "addopts=", "--timeout=300", "-o", "log_level=WARNING"],
)

SUITES = {s.name: s for s in (KAFKA_PYTHON,)}
