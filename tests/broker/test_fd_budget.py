"""Partitions as a file budget: the broker raises its soft open-file limit to the hard one,
and refuses new partitions (POLICY_VIOLATION, naming the limit) that would leave less than
a tenth of it for connections, instead of running out of descriptors and accepting no
connection at all; once topics are deleted it creates again."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.test_cli_and_daemon import wait_for_port
from tests.broker.test_fd_exhaustion import daemon_with_nofile

SOFT, HARD = 300, 800


def create(admin: AdminClient, name: str, partitions: int) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=60)[name].result()


def test_partitions_past_the_file_budget_are_refused_and_the_broker_serves_on(
    tmp_path: Path,
) -> None:
    port, proc = daemon_with_nofile(tmp_path, SOFT, HARD, subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        # More than the soft limit allows: served because the broker raised it to the hard.
        create(admin, "first", 500)
        with pytest.raises(KafkaException) as refused:
            create(admin, "second", 500)
        error = refused.value.args[0]
        assert error.code() == KafkaError.POLICY_VIOLATION, error
        assert "RLIMIT_NOFILE" in error.str() and f"limit of {HARD}" in error.str(), error
        assert "second" not in admin.list_topics(timeout=10).topics
        admin.delete_topics(["first"], request_timeout=60)["first"].result()
        create(admin, "second", 500)
        assert len(admin.list_topics(timeout=10).topics["second"].partitions) == 500
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
