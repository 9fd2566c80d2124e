"""TLS vs PLAINTEXT produce and catch-up consume, kafkalite and Apache Kafka in the same run,
both brokers serving the same certificate (one PKCS12 keystore made by `openssl pkcs12`).

Each broker runs as its own process with a PLAINTEXT and an SSL listener. A round
produces `--mib` MiB of 1 KiB records to a new topic over each listener of each broker
(confluent-kafka, acks=1) and reads the topic back to its end with kcat (librdkafka), in
the order kafkalite-PLAINTEXT, kafkalite-SSL, Kafka-PLAINTEXT, Kafka-SSL, so machine noise
falls on both systems alike; `--rounds` rounds (at least 3), medians reported.

The last stdout line is JSON, with `tls_consume_ratio_vs_kafka` = kafkalite's SSL catch-up
consume MB/s over Kafka's."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import MIB, REPO, median, tls_fetch_path

sys.path.insert(0, str(REPO))
from tests.security.certs import Authority

RECORD_BYTES = 1024
PASSWORD = "bench-secret"


def keystore(directory: Path) -> tuple[Path, Path]:
    """(server.p12, ca.crt): a server certificate for localhost/127.0.0.1 from a new CA."""
    ca = Authority(directory, "ca")
    server = ca.issue("server", "localhost", server=True)
    store = directory / "server.p12"
    subprocess.run(
        [
            "openssl", "pkcs12", "-export", "-in", str(server.cert), "-inkey", str(server.key),
            "-certfile", str(ca.pem.cert), "-name", "server", "-out", str(store),
            "-passout", f"pass:{PASSWORD}",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return store, ca.pem.cert


def ssl_settings(store: Path) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(store),
        "ssl.keystore.password": PASSWORD,
        "ssl.key.password": PASSWORD,
    }


def client_settings(protocol: str, ca: Path) -> dict[str, str]:
    if protocol == "PLAINTEXT":
        return {}
    return {"security.protocol": "SSL", "ssl.ca.location": str(ca)}


def produce_seconds(bootstrap: str, topic: str, mib: int, extra: dict[str, str]) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1 << 20,
            "acks": "1",
            "log_level": 0,
            **extra,
        }
    )
    value = os.urandom(RECORD_BYTES)
    started = time.perf_counter()
    for _ in range(mib * MIB // RECORD_BYTES):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300) != 0:
        raise RuntimeError(f"records left undelivered to {bootstrap}")
    return time.perf_counter() - started


def consume_seconds(bootstrap: str, topic: str, extra: dict[str, str]) -> float:
    args = [arg for k, v in extra.items() for arg in ("-X", f"{k}={v}")]
    cmd = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", ""]
    started = time.perf_counter()
    done = subprocess.run(
        [*cmd, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="MiB produced per topic")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median reported; >= 3)")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds must be at least 3")

    from kafkalite.bench.systems import Kafka, Kafkalite, free_port

    with tempfile.TemporaryDirectory(prefix="kafkalite-tls-vs-kafka-") as tmp:
        root = Path(tmp)
        (root / "pki").mkdir()
        store, ca = keystore(root / "pki")
        (root / "kl").mkdir()
        (root / "kafka").mkdir()
        lite = Kafkalite(root / "kl" / "data", overrides=ssl_settings(store))
        lite_ssl = free_port()
        lite.settings["listeners"] += f",SSL://127.0.0.1:{lite_ssl}"
        kafka_ssl = free_port()
        kafka = Kafka(root / "kafka" / "data", overrides=ssl_settings(store))
        kafka.props["listeners"] += f",SSL://127.0.0.1:{kafka_ssl}"
        kafka.props["advertised.listeners"] += f",SSL://127.0.0.1:{kafka_ssl}"
        kafka.props["listener.security.protocol.map"] += ",SSL:SSL"
        kafka.props["num.partitions"] = "1"
        systems = {
            "kafkalite": (lite, {"PLAINTEXT": lite.bootstrap, "SSL": f"127.0.0.1:{lite_ssl}"}),
            "kafka": (kafka, {"PLAINTEXT": kafka.bootstrap, "SSL": f"127.0.0.1:{kafka_ssl}"}),
        }
        seconds: dict[str, dict[str, list[float]]] = {}
        try:
            for system, _ in systems.values():
                system.start()
            for round_no in range(args.rounds):
                for name, (_system, addrs) in systems.items():
                    for protocol, bootstrap in addrs.items():
                        extra = client_settings(protocol, ca)
                        topic = f"tls-{name}-{protocol.lower()}-{round_no}"
                        p = produce_seconds(bootstrap, topic, args.mib, extra)
                        c = consume_seconds(bootstrap, topic, extra)
                        got = seconds.setdefault(f"{name}_{protocol.lower()}", {})
                        got.setdefault("produce", []).append(p)
                        got.setdefault("consume", []).append(c)
                        print(
                            f"round {round_no + 1} {name} {protocol}: produce "
                            f"{args.mib / p:.1f} MiB/sec, catch-up consume {args.mib / c:.1f} "
                            "MiB/sec",
                            flush=True,
                        )
        finally:
            for system, _ in systems.values():
                system.stop()

    mb = args.mib * MIB * (RECORD_BYTES + 70) / RECORD_BYTES / 1e6
    rates = {
        f"{key}_{kind}_mb_per_s": round(mb / median(values), 1)
        for key, kinds in seconds.items()
        for kind, values in kinds.items()
    }
    ratio = rates["kafkalite_ssl_consume_mb_per_s"] / rates["kafka_ssl_consume_mb_per_s"]
    for name in ("kafkalite", "kafka"):
        print(
            f"{name}: produce PLAINTEXT {rates[f'{name}_plaintext_produce_mb_per_s']} MB/sec, "
            f"SSL {rates[f'{name}_ssl_produce_mb_per_s']} MB/sec; catch-up consume PLAINTEXT "
            f"{rates[f'{name}_plaintext_consume_mb_per_s']} MB/sec, "
            f"SSL {rates[f'{name}_ssl_consume_mb_per_s']} MB/sec"
        )
    result = {
        "mib_per_topic": args.mib,
        "rounds": args.rounds,
        "producer": "confluent-kafka acks=1",
        "consumer": "kcat",
        "certificate": "one PKCS12 keystore for both brokers",
        "kafkalite_tls_fetch_path": tls_fetch_path(),
        **rates,
        "kafkalite_tls_vs_plaintext_consume": round(
            rates["kafkalite_ssl_consume_mb_per_s"] / rates["kafkalite_plaintext_consume_mb_per_s"],
            3,
        ),
        "kafka_tls_vs_plaintext_consume": round(
            rates["kafka_ssl_consume_mb_per_s"] / rates["kafka_plaintext_consume_mb_per_s"], 3
        ),
        "tls_produce_ratio_vs_kafka": round(
            rates["kafkalite_ssl_produce_mb_per_s"] / rates["kafka_ssl_produce_mb_per_s"], 3
        ),
        "tls_consume_ratio_vs_kafka": round(ratio, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
