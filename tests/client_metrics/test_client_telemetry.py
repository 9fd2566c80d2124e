"""KIP-714 end to end: Kafka 4.1.1's Java producer (metrics push on, its default) finds a
client-metrics subscription on kafkalite, pushes its metrics at the subscription's interval,
and the pushed values appear on the broker's Prometheus endpoint labelled with the client's
instance id, client id and software."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request

from kafkalite import Broker
from kafkalite.bench import kafka_ref
from tests.client_metrics.conftest import client_metrics

FAMILY = "kafkalite_client_telemetry_value"


def _scrape(broker: Broker) -> str:
    return urllib.request.urlopen(broker.metrics_url, timeout=5).read().decode()


def test_a_java_producer_pushes_its_metrics_to_the_endpoint() -> None:
    with Broker(config={"metrics.listen": "127.0.0.1:0"}) as broker:
        bootstrap = broker.bootstrap_servers
        client_metrics(
            bootstrap,
            "--alter",
            "--name",
            "java-producers",
            "--metrics",
            "org.apache.kafka.producer.",
            "--interval",
            "500",
            "--match",
            "client_software_name=apache-kafka-java,client_id=telemetry-.*",
        )
        cmd = kafka_ref.tool_command(
            kafka_ref.ensure_jars(),
            "org.apache.kafka.tools.ProducerPerformance",
            [
                "--topic",
                "telemetry-test",
                "--num-records",
                "100000",
                "--record-size",
                "100",
                "--throughput",
                "10000",
                "--producer-props",
                f"bootstrap.servers={bootstrap}",
                "client.id=telemetry-producer",
                "enable.metrics.push=true",
            ],
        )
        producer = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            deadline = time.monotonic() + 60
            text = ""
            while time.monotonic() < deadline:
                text = _scrape(broker)
                if f"{FAMILY}{{" in text and 'metric="org.apache.kafka.producer.' in text:
                    break
                time.sleep(0.5)
        finally:
            producer.kill()
            producer.wait()
        samples = [line for line in text.splitlines() if line.startswith(FAMILY + "{")]
        assert samples, text[-3000:]
        line = next(s for s in samples if 'metric="org.apache.kafka.producer.' in s)
        assert 'client_id="telemetry-producer"' in line, line
        assert 'client_software_name="apache-kafka-java"' in line, line
        assert re.search(r'client_instance_id="[0-9a-f-]{36}"', line), line
        # Only what the subscription asked for.
        assert all('metric="org.apache.kafka.producer.' in s for s in samples), samples[:5]
        assert f"# TYPE {FAMILY} gauge" in text
