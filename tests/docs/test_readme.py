"""The README's "Using it" and storage-core commands, run as written against a real broker:
shell lines through bash (with `-b` pointing the client commands at this test's broker),
Python blocks through the interpreter. A command the README gets wrong fails here."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker

README = Path(__file__).resolve().parents[2] / "README.md"
DEFAULT_BROKER = "127.0.0.1:9092"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def blocks(title: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(section(title)) if lang == language]


def shell_lines(title: str) -> list[str]:
    lines = []
    for body in blocks(title, ""):
        for line in body.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command:
                lines.append(command)
    return lines


def aimed_at(command: str, bootstrap: str) -> str:
    """The command with the default broker replaced by ours: kcat's address rewritten, and
    `-b` added to every kafkalite client command of a pipeline."""
    command = command.replace(DEFAULT_BROKER, bootstrap)
    parts = []
    for part in command.split("|"):
        if part.strip().startswith("kafkalite ") and " -b " not in part:
            part = f"{part.rstrip()} -b {bootstrap} "
        parts.append(part)
    return "|".join(parts)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data") as b:
        yield b


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a `kafkalite` that is this interpreter's kafkalite (the tree under test)."""

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kafkalite"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafkalite.cli "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def run(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def describe(broker: Broker, group: str, env: dict[str, str]) -> list[dict[str, str]]:
    done = subprocess.run(
        ["kafkalite", "group", "describe", group, "-b", broker.bootstrap_servers],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    header, *rows = [line.split() for line in done.stdout.splitlines() if line.strip()] or [[]]
    return [dict(zip(header, row, strict=True)) for row in rows]


def wait_for_group(broker: Broker, env: dict[str, str], ok) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 60
    while not ok(describe(broker, "billing", env)):
        assert time.monotonic() < deadline, describe(broker, "billing", env)
        time.sleep(0.5)


def caught_up(rows: list[dict[str, str]]) -> bool:
    """Every record committed (a partition with no records may have no committed offset)."""
    committed = sum(int(r["CURRENT-OFFSET"]) for r in rows if r["CURRENT-OFFSET"] != "-")
    return bool(rows) and committed == sum(int(r["LOG-END-OFFSET"]) for r in rows)


def test_using_it_commands_work_as_written(
    broker: Broker, shell_env: dict[str, str], tmp_path: Path
) -> None:
    commands = shell_lines("Using it")
    assert len(commands) >= 15, commands
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    background: list[subprocess.Popen[str]] = []
    printed: list[str] = []
    try:
        for command in commands:
            aimed = aimed_at(command.removesuffix("&"), broker.bootstrap_servers)
            if command.endswith("&"):
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", f"exec {aimed}"],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        env=shell_env,
                        cwd=tmp_path,
                    )
                )
                continue
            if command.startswith("kill %"):
                # As a user would: once the consumers have read and committed everything.
                wait_for_group(broker, shell_env, caught_up)
                jobs = [background[int(j) - 1] for j in re.findall(r"%(\d+)", command)]
                for job in jobs:
                    job.send_signal(signal.SIGTERM)
                for job in jobs:
                    stdout, stderr = job.communicate(timeout=30)
                    assert job.returncode == 0, stderr
                    printed.extend(stdout.split())
                continue
            if background and "group" in command and not printed:
                # "run two of these: they split the partitions" -- once both have joined.
                wait_for_group(
                    broker,
                    shell_env,
                    lambda rows: len({r["CONSUMER-ID"] for r in rows} - {"-"}) == len(background),
                )
            outputs[command] = run(aimed, shell_env, tmp_path)
    finally:
        for job in background:
            job.kill()
            job.wait()

    def out(prefix: str) -> str:
        return next(v.stdout for k, v in outputs.items() if k.startswith(prefix))

    assert "hello" in out("kcat -b 127.0.0.1:9092 -C")
    assert sorted(out("kafkalite consume orders").split()) == ["1", "2", "3", "4", "5"]
    assert "PartitionCount: 3" in out("kafkalite topic describe orders")
    assert {"greetings", "orders"} <= set(out("kafkalite topic list").split())
    assert "billing" in out("kafkalite group list --state")
    # The two background consumers printed every record once between them.
    assert sorted(printed) == ["1", "2", "3", "4", "5"]
    assert "Deletion of requested consumer groups ('billing')" in out("kafkalite group delete")


def test_python_examples_run(tmp_path: Path) -> None:
    examples = blocks("Using it", "python") + blocks("Using the storage core from Python", "python")
    assert len(examples) == 2, examples
    embedded = subprocess.run(
        [sys.executable, "-c", examples[0]], capture_output=True, text=True, timeout=60
    )
    assert embedded.returncode == 0, embedded.stderr
    assert re.match(r"127\.0\.0\.1:\d+\s", embedded.stdout), embedded.stdout
    storage = examples[1].replace("/tmp/orders-0", str(tmp_path / "orders-0"))
    done = subprocess.run(
        [sys.executable, "-c", storage], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "b'key', b'value'" in done.stdout, done.stdout
