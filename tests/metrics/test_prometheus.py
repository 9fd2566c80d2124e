"""The Prometheus endpoint (`metrics.listen`) of a real broker, read over HTTP while real
clients produce and consume: traffic counters that agree with what the log holds, request
figures per API, consumer lag, connections; `kafkalite top` and the Grafana dashboard
against the same endpoint."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from importlib import resources

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite import Broker
from kafkalite.errors import KafkaliteError
from kafkalite.monitoring import scrape

RECORDS = 2_000


@pytest.fixture(scope="module")
def broker():
    with Broker(config={"metrics.listen": "127.0.0.1:0"}) as b:
        yield b


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v" * 100, key=str(i).encode(), partition=i % 2)
    assert p.flush(30) == 0


def test_traffic_counters_match_the_log(broker: Broker) -> None:
    assert broker.metrics_url is not None
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("metered", 2, 1)])["metered"].result(30)
    produce(broker.bootstrap_servers, "metered", RECORDS)
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "metered-readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe(["metered"])
    got = 0
    while got < RECORDS:
        batch = c.consume(500, timeout=10)
        assert batch, f"stalled at {got}"
        got += sum(1 for m in batch if m.error() is None)
    c.commit(asynchronous=False)
    samples = scrape.fetch(broker.metrics_url)
    bytes_in = scrape.value(
        samples, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered"
    )
    log_bytes = sum(
        scrape.by_label(samples, "kafka_log_log_size", "topic", "partition")[("metered", p)]
        for p in ("0", "1")
    )
    # Every byte appended is on disk (no retention has run): the counter is exact.
    assert bytes_in == log_bytes > RECORDS * 100
    assert (
        scrape.value(samples, "kafka_server_brokertopicmetrics_messagesin_total", topic="metered")
        == RECORDS
    )
    assert (
        scrape.value(samples, "kafka_server_brokertopicmetrics_bytesout_total", topic="metered")
        >= log_bytes
    )
    assert scrape.value(samples, "kafka_server_brokertopicmetrics_bytesin_total") >= bytes_in
    ends = scrape.by_label(samples, "kafka_log_log_logendoffset", "topic", "partition")
    assert ends[("metered", "0")] + ends[("metered", "1")] == RECORDS
    # Everything read and committed: no lag; then 30 more records the group has not read.
    lag = scrape.by_label(samples, "kafka_consumergroup_lag", "consumergroup", "topic", "partition")
    assert lag[("metered-readers", "metered", "0")] == lag[("metered-readers", "metered", "1")] == 0
    connections = scrape.value(
        samples, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT"
    )
    assert connections is not None and connections >= 1
    produce(broker.bootstrap_servers, "metered", 30)
    lag = scrape.by_label(
        scrape.fetch(broker.metrics_url),
        "kafka_consumergroup_lag",
        "consumergroup",
        "topic",
        "partition",
    )
    assert lag[("metered-readers", "metered", "0")] + lag[("metered-readers", "metered", "1")] == 30
    c.close()


def test_request_figures_per_api(broker: Broker) -> None:
    produce(broker.bootstrap_servers, "timed", 10)
    samples = scrape.fetch(broker.metrics_url)
    requests = scrape.by_label(samples, "kafka_network_requestmetrics_requests_total", "request")
    assert requests[("Produce",)] >= 1 and requests[("Metadata",)] >= 1
    p99 = scrape.value(
        samples, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.99"
    )
    count = scrape.value(
        samples, "kafka_network_requestmetrics_totaltimems_count", request="Produce"
    )
    assert p99 is not None and p99 > 0
    assert count == requests[("Produce",)]
    for gauge in (
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
    ):
        assert scrape.value(samples, gauge) == 0
    assert scrape.value(samples, "kafka_server_replicamanager_partitioncount") >= 1


def test_a_deleted_topic_leaves_the_figures(broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    produce(broker.bootstrap_servers, "short-lived", 5)
    assert scrape.value(
        scrape.fetch(broker.metrics_url),
        "kafka_server_brokertopicmetrics_bytesin_total",
        topic="short-lived",
    )
    admin.delete_topics(["short-lived"])["short-lived"].result(30)
    text = urllib.request.urlopen(broker.metrics_url, timeout=5).read().decode()
    assert 'topic="short-lived"' not in text


def test_other_paths_get_404_and_a_bad_address_names_the_key(broker: Broker) -> None:
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(broker.metrics_url.replace("/metrics", "/nope"), timeout=5)
    assert e.value.code == 404
    with pytest.raises(KafkaliteError, match=r"metrics\.listen"):
        Broker(config={"metrics.listen": "not-an-address"}).start()


def test_top_shows_topics_and_lag(broker: Broker) -> None:
    produce(broker.bootstrap_servers, "metered", 10)
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", "top", "--url", broker.metrics_url,
         "--interval", "0.3", "--iterations", "2"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert out.count("kafkalite top") == 2
    assert re.search(r"^metered\s+\d", out, re.M), out
    assert re.search(r"^metered-readers\s+[\d,]+\s+2$", out, re.M), out


def test_the_grafana_dashboard_reads_metrics_the_broker_serves(broker: Broker) -> None:
    dashboard = json.loads(
        resources.files("kafkalite.monitoring").joinpath("grafana-dashboard.json").read_text()
    )
    served = {name for name, _ in scrape.fetch(broker.metrics_url)}
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    for expr in exprs:
        names = set(re.findall(r"\b(kafka_[a-z_]+)\b", expr))
        assert names and names <= served, (expr, names - served)
