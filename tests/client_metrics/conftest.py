"""Helpers for the client-metrics tests: Kafka 4.1.1's own kafka-client-metrics and
kafka-configs against a kafkalite broker."""

from __future__ import annotations

import subprocess

from kafkalite.bench import kafka_ref

TOOLS = {
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
}


def run_tool(tool: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = kafka_ref.tool_command(
        kafka_ref.ensure_jars(), TOOLS[tool], ["--bootstrap-server", bootstrap, *args]
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def client_metrics(bootstrap: str, *args: str) -> str:
    """Run ``kafka-client-metrics`` and return its output (failing on an error)."""
    done = run_tool("kafka-client-metrics", bootstrap, *args)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def client_metrics_failing(bootstrap: str, *args: str) -> str:
    """Run ``kafka-client-metrics`` expecting it to fail; its output (stdout and stderr)."""
    done = run_tool("kafka-client-metrics", bootstrap, *args)
    assert done.returncode != 0, (args, done.stdout[-2000:])
    return done.stdout + done.stderr
