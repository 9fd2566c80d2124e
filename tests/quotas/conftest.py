"""Helpers for the quota tests: Kafka's own kafka-configs against a kafkalite broker."""

from __future__ import annotations

import subprocess

from kafkalite.bench import kafka_ref


def kafka_configs(bootstrap: str, *args: str) -> str:
    """Run Kafka 4.1.1's ``kafka-configs`` and return its output (failing on an error)."""
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "kafka.admin.ConfigCommand",
        ["--bootstrap-server", bootstrap, *args],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def kafka_configs_failing(bootstrap: str, *args: str) -> str:
    """Run ``kafka-configs`` expecting it to fail; its output (stdout and stderr)."""
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(),
        "kafka.admin.ConfigCommand",
        ["--bootstrap-server", bootstrap, *args],
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, (args, done.stdout[-2000:])
    return done.stdout + done.stderr
