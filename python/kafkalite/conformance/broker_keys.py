"""Every broker key Apache Kafka knows, altered one at a time on a BROKER resource, and how
the broker answers: the same code and message from kafkalite as from Kafka, key by key.

Kafka's keys come from its own jars (``BrokerKeys.java`` prints KafkaConfig's ConfigDef with
each key's type, default, validator and DynamicBrokerConfig's update mode). Each key is then
sent in AlterConfigs (v1) and IncrementalAlterConfigs (v0, SET), to this broker ("1") and to
the cluster default (""), with ``validate_only`` (nothing is changed): once with a value
of its type (its default, or a sample when the default is null) and, for a number or a
boolean, once with a value that is not one. Security keys are also sent under a listener
prefix (``listener.name.plaintext.<key>``). The answers of a live Kafka are the recorded
table (``broker_keys-<version>.json``), which tests/dyncfg/test_kafka_broker_keys.py holds
kafkalite to without a Kafka running.

Regenerate the table from a live Kafka and check a kafkalite daemon against it::

    python -m kafkalite.conformance.broker_keys record   # starts Kafka 4.4.0, then kafkalite
    python -m kafkalite.conformance.broker_keys check --bootstrap HOST:PORT  # a running broker
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.bench.systems import Kafka

KAFKA_VERSION = "4.4.0"
HERE = Path(__file__).parent
LISTER = HERE / "BrokerKeys.java"


#: The recorded table: Kafka's version and features, its keys, and each probe's answer.
Table = dict[str, Any]
#: Probe id -> (Kafka's answer, this broker's).
Differences = dict[str, tuple[list[object], list[object] | None]]


def table_path(version: str = KAFKA_VERSION) -> Path:
    return HERE / f"broker_keys-{version}.json"


BROKER = 4  # ConfigResource.Type.BROKER
ALTER_CONFIGS, ALTER_VERSION = 33, 1
INCREMENTAL, INCREMENTAL_VERSION = 44, 0
SET = 0
#: The broker id both brokers run as (Kafka's reference node and kafkalite's default).
BROKER_ID = "1"
#: The listener both brokers have; its name prefixes the per-listener probes.
LISTENER_PREFIX = "listener.name.plaintext."
NUMERIC = {"INT", "SHORT", "LONG", "DOUBLE"}


@dataclass(frozen=True)
class KafkaKey:
    """One key of Kafka's ConfigDef, as BrokerKeys.java prints it."""

    name: str
    type: str
    default: str | None
    mode: str  # per-broker, cluster-wide or read-only
    validator: str
    internal: bool = False  # defined, but not described by DescribeConfigs

    def sample(self) -> str:
        """A value of the key's type: its default, else one its validator takes."""
        if self.default is not None and self.default != "<required>":
            return self.default
        return {
            "BOOLEAN": "false",
            "INT": "1",
            "SHORT": "1",
            "LONG": "1",
            "DOUBLE": "0.5",
        }.get(self.type, "x")


def list_kafka_keys(libs: Path) -> list[KafkaKey]:
    """Kafka's broker keys from its jars in ``libs``."""
    done = subprocess.run(
        ["java", "-cp", str(libs / "*"), str(LISTER)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"BrokerKeys.java failed: {done.stderr[-2000:]}")
    keys = []
    for line in done.stdout.splitlines():
        name, type_, default, mode, validator, internal = line.split("\t")
        keys.append(
            KafkaKey(
                name,
                type_,
                None if default == "null" else default,
                mode,
                validator,
                internal == "true",
            )
        )
    return keys


def is_listener_key(name: str) -> bool:
    """Keys Kafka reconfigures per listener (`listener.name.<l>.<key>`)."""
    return name.startswith(("ssl.", "sasl.")) or name == "connections.max.reauth.ms"


@dataclass(frozen=True)
class Probe:
    api: str  # "alter" (AlterConfigs) or "incremental" (IncrementalAlterConfigs)
    entity: str  # BROKER_ID or "" (the cluster default)
    name: str
    value: str

    @property
    def id(self) -> str:
        return f"{self.api} {self.entity or '<default>'} {self.name}={self.value}"


#: Names Kafka does not define, and defined keys under a listener Kafka does not have or
#: under a SASL mechanism: how each broker treats a name it cannot place.
EXTRA_NAMES = [
    ("no.such.key", "1"),
    (LISTENER_PREFIX + "no.such.key", "1"),
    ("listener.name.nosuch.ssl.client.auth", "required"),
    (LISTENER_PREFIX + "plain.sasl.jaas.config", "x"),
    (LISTENER_PREFIX + "oauthbearer.connections.max.reauth.ms", "1000"),
    (LISTENER_PREFIX + "log.retention.ms", "1000"),
]


def out_of_bounds(key: KafkaKey) -> str | None:
    """A value of the key's type that its validator refuses, if it has one."""
    v = key.validator
    if v.startswith("[") and "..." in v:
        lo, _, hi = v.strip("[]").partition(",...")
        hi = hi.lstrip(",")
        if lo:
            return str(int(float(lo)) - 1) if key.type != "DOUBLE" else str(float(lo) - 1)
        if hi:
            return str(int(float(hi)) + 1) if key.type != "DOUBLE" else str(float(hi) + 1)
        return None
    if v and key.type in ("STRING", "LIST"):
        return "nonsense"
    return None


def probes(keys: list[KafkaKey]) -> Iterator[Probe]:
    named: list[tuple[str, list[str]]] = []
    for key in keys:
        values = [key.sample()]
        if key.type in NUMERIC or key.type == "BOOLEAN":
            values.append("abc")
        bad = out_of_bounds(key)
        if bad is not None:
            values.append(bad)
        named.append((key.name, values))
        if is_listener_key(key.name):
            named.append((LISTENER_PREFIX + key.name, values))
    named.extend((name, [value]) for name, value in EXTRA_NAMES)
    for name, values in named:
        for value in values:
            for api in ("alter", "incremental"):
                for entity in (BROKER_ID, ""):
                    yield Probe(api, entity, name, value)


# ---- the wire: AlterConfigs v1 and IncrementalAlterConfigs v0 (neither flexible) ----


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _request(probe: Probe, correlation_id: int, validate_only: bool = True) -> bytes:
    config = _str(probe.name)
    if probe.api == "incremental":
        api, version = INCREMENTAL, INCREMENTAL_VERSION
        config += struct.pack(">b", SET)
    else:
        api, version = ALTER_CONFIGS, ALTER_VERSION
    config += _str(probe.value)
    body = (
        struct.pack(">i", 1)
        + struct.pack(">b", BROKER)
        + _str(probe.entity)
        + struct.pack(">i", 1)
        + config
        + (b"\x01" if validate_only else b"\x00")
    )
    header = struct.pack(">hhi", api, version, correlation_id) + _str("broker-keys")
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf.extend(chunk)
    return bytes(buf)


def _answer(frame: bytes) -> tuple[int, str | None]:
    # correlation id, throttle time, responses count, then the one response.
    pos = 12
    (code,) = struct.unpack_from(">h", frame, pos)
    pos += 2
    (size,) = struct.unpack_from(">h", frame, pos)
    pos += 2
    message = None if size < 0 else frame[pos : pos + size].decode()
    return code, message


class Prober:
    """One connection that sends each probe and reads its answer."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.correlation = 0

    def __enter__(self) -> Prober:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def ask(self, probe: Probe, validate_only: bool = True) -> tuple[int, str | None]:
        self.correlation += 1
        self.sock.sendall(_request(probe, self.correlation, validate_only))
        (size,) = struct.unpack(">i", _recv_exact(self.sock, 4))
        return _answer(_recv_exact(self.sock, size))


def answers(bootstrap: str, keys: list[KafkaKey]) -> dict[str, list[object]]:
    """Each probe's id -> [error code, error message]."""
    out: dict[str, list[object]] = {}
    with Prober(bootstrap) as prober:
        for probe in probes(keys):
            code, message = prober.ask(probe)
            out[probe.id] = [code, message]
    return out


def load_table(version: str = KAFKA_VERSION) -> Table:
    return json.loads(table_path(version).read_text())


def keys_of(table: Table) -> list[KafkaKey]:
    return [KafkaKey(**k) for k in table["keys"]]


def differences(
    table: Table,
    got: dict[str, list[object]],
) -> Differences:
    """Each probe whose answer differs from the table's: id -> (Kafka's, this broker's)."""
    return {
        probe_id: (want, got.get(probe_id))
        for probe_id, want in table["answers"].items()
        if got.get(probe_id) != want
    }


def record(version: str, work: Path) -> Table:
    """Start Kafka ``version``, list its keys and record its answers."""
    from kafkalite.bench import kafka_ref

    libs = kafka_ref.ensure_jars(version)
    keys = list_kafka_keys(libs)
    kafka = _kafka_without_elr(work, version)
    kafka.start()
    try:
        got = answers(kafka.bootstrap, keys)
    finally:
        kafka.stop()
    return {
        "kafka_version": version,
        "kafka_features": FORMAT_FEATURES,
        "keys": [k.__dict__ for k in keys],
        "answers": got,
    }


#: Kafka 4's eligible leader replicas (KIP-966), on by default from 4.1, make the controller
#: keep a cluster-level min.insync.replicas of its own: with it, every AlterConfigs of the
#: cluster default (which replaces the whole set) is refused ("Cluster-level
#: min.insync.replicas cannot be removed while ELR is enabled."). kafkalite has no ELR (its
#: ApiVersions finalizes no eligible.leader.replicas.version), so the table is recorded
#: from a Kafka formatted without it, the same feature set.
FORMAT_FEATURES = {"eligible.leader.replicas.version": "0"}


def _kafka_without_elr(work: Path, version: str) -> Kafka:
    import base64
    import uuid

    from kafkalite.bench import kafka_ref
    from kafkalite.bench.systems import Kafka

    class KafkaWithoutElr(Kafka):
        def prepare(self) -> None:
            kafka_ref.write_properties(self.config, self.props)
            cluster_id = "A" + base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:21]
            features = [a for k, v in FORMAT_FEATURES.items() for a in ("--feature", f"{k}={v}")]
            cmd = [
                "java",
                *kafka_ref.TOOLS_HEAP_OPTS,
                "-cp",
                kafka_ref.classpath(self.libs),
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id,
                "-c",
                str(self.config),
                "--standalone",
                *features,
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"kafka storage format: {(done.stdout + done.stderr)[-1500:]}")

    return KafkaWithoutElr(work / "kafka-data", version=version)


def check_kafkalite(table: Table, work: Path) -> Differences:
    """Start a kafkalite daemon and compare its answers with the table's."""
    from kafkalite.bench.systems import Kafkalite

    broker = Kafkalite(work / "kafkalite-data")
    broker.start()
    try:
        return differences(table, answers(broker.bootstrap, keys_of(table)))
    finally:
        broker.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkalite.conformance.broker_keys")
    sub = p.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="record a live Kafka's answers, then check kafkalite")
    rec.add_argument("--kafka-version", default=KAFKA_VERSION)
    rec.add_argument("--no-check", action="store_true", help="only record the table")
    chk = sub.add_parser("check", help="check a running broker against the recorded table")
    chk.add_argument("--bootstrap", help="a running broker (default: start kafkalite)")
    chk.add_argument("--kafka-version", default=KAFKA_VERSION)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkalite-broker-keys-") as tmp:
        if args.cmd == "record":
            table = record(args.kafka_version, Path(tmp))
            table_path(args.kafka_version).write_text(
                json.dumps(table, indent=1, sort_keys=True) + "\n"
            )
            print(f"{len(table['answers'])} answers of Kafka {args.kafka_version} recorded")
            if args.no_check:
                return 0
        else:
            table = load_table(args.kafka_version)
        if getattr(args, "bootstrap", None):
            diffs = differences(table, answers(args.bootstrap, keys_of(table)))
        else:
            diffs = check_kafkalite(table, Path(tmp))
    for probe_id, (want, have) in diffs.items():
        print(f"{probe_id}: Kafka {want}, this broker {have}")
    print(f"{len(diffs)} of {len(table['answers'])} answers differ from Kafka's")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
