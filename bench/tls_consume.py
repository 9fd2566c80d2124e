"""Catch-up consume over TLS vs PLAINTEXT from one kafkalite broker, with kcat (librdkafka)
as the consumer, in the same run and on the same log.

PLAINTEXT sends record bytes with sendfile; TLS encrypts them in user space through rustls
unless the kernel has kTLS (the broker logs which). The log is written first (page cache
warm), then read to the end once per listener, `--rounds` times; medians are reported.

The last stdout line is JSON: plaintext_mb_per_s, tls_mb_per_s, tls_vs_plaintext, ...
"""

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


def consume_seconds(bootstrap: str, topic: str, extra: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "",
            *extra,
        ],
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
    parser.add_argument(
        "--mib", type=int, default=256, help="log size to write and read back, in MiB"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="reads per listener (median reported)"
    )
    args = parser.parse_args()

    from confluent_kafka import Producer

    from kafkalite import Broker

    with tempfile.TemporaryDirectory(prefix="kafkalite-tls-bench-") as tmp:
        pki = Path(tmp) / "pki"
        pki.mkdir()
        ca = Authority(pki, "ca")
        server = ca.issue("server", "localhost", server=True)
        config = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.bundle),
        }
        with Broker(log_dirs=Path(tmp) / "data", config=config) as broker:
            addr = {n: f"{h}:{p}" for n, h, p in broker.addresses}
            producer = Producer(
                {"bootstrap.servers": addr["PLAINTEXT"], "linger.ms": 20, "batch.size": 1 << 20}
            )
            value = os.urandom(1024)
            for _ in range(args.mib * 1024):
                while True:
                    try:
                        producer.produce("tls-bench", value)
                        break
                    except BufferError:
                        producer.poll(0.05)
            assert producer.flush(120) == 0
            tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca.pem.cert}"]
            plain_s = [
                consume_seconds(addr["PLAINTEXT"], "tls-bench", []) for _ in range(args.rounds)
            ]
            tls_s = [consume_seconds(addr["SSL"], "tls-bench", tls) for _ in range(args.rounds)]
    size_mb = args.mib * 1024 * (1024 + 70) / MIB
    plain = size_mb / median(plain_s)
    secure = size_mb / median(tls_s)
    ratio = secure / plain
    print(f"PLAINTEXT catch-up consume: {plain:.1f} MB/sec, SSL: {secure:.1f} MB/sec, {ratio:.2f}x")
    result = {
        "mib_written": args.mib,
        "consumer": "kcat",
        "plaintext_mb_per_s": round(plain, 1),
        "tls_mb_per_s": round(secure, 1),
        "tls_vs_plaintext": round(secure / plain, 3),
        "tls_fetch_path": tls_fetch_path(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
