"""Apache Kafka as the reference system: jars from Maven Central, a KRaft single node.

Every side-by-side bench compares with KAFKA_VERSION (the cluster launchers in
``clusters.py`` and the Java driver too); the test suite's Java clients and tools come at
CLIENT_KAFKA_VERSION (``ensure_jars()``'s default), and the conformance runner pins its
own (``conformance.brokers``).

Nothing is vendored. Maven resolves the broker (kafka_2.13) and the tools (kafka-tools, for
ProducerPerformance / ConsumerPerformance / EndToEndLatency) at one pinned version into a
cache outside the repository; later runs reuse it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path

KAFKA_VERSION = "4.4.0"
# What the tests run Kafka's Java clients and tools at (the bench's Kafka before 4.4.0).
CLIENT_KAFKA_VERSION = "4.1.0"
SCALA_VERSION = "2.13"
LOG4J_VERSION = "2.24.3"
# kafka-server-start.sh's defaults: 1 GiB heap and G1 with a 20 ms pause goal. Its
# KAFKA_HEAP_OPTS environment variable overrides the heap here too (the conformance fuzzer
# makes thousands of partitions, which Kafka cannot hold in 1 GiB).
KAFKA_HEAP_OPTS = os.environ.get("KAFKA_HEAP_OPTS", "-Xms1G -Xmx1G").split()
KAFKA_JVM_OPTS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
TOOLS_HEAP_OPTS = ["-Xmx512M"]  # kafka-run-class.sh's default for the perf tools
MVN_TIMEOUT_S = 1200

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkalite.bench</groupId>
  <artifactId>kafka-reference</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_{scala}</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version></dependency>
  </dependencies>
</project>
"""


class KafkaFetchError(RuntimeError):
    """Maven could not resolve the Kafka jars."""


def cache_dir(version: str = CLIENT_KAFKA_VERSION) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "kafkalite" / f"kafka-{version}"


def ensure_jars(version: str = CLIENT_KAFKA_VERSION) -> Path:
    """The directory of Kafka's runtime jars, resolving them with Maven on first use."""
    home = cache_dir(version)
    libs = home / "libs"
    marker = home / "resolved"
    if marker.exists() and any(libs.glob(f"kafka_{SCALA_VERSION}-{version}.jar")):
        return libs
    if shutil.which("mvn") is None:
        raise KafkaFetchError("mvn is not installed (apt-get install maven); it fetches Kafka")
    if shutil.which("java") is None:
        raise KafkaFetchError("java is not installed (Kafka 4 needs Java 17+)")
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(
        POM.format(scala=SCALA_VERSION, kafka=version, log4j=LOG4J_VERSION)
    )
    cmd = [
        "mvn",
        "-q",
        "-B",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={libs}",
        "-DincludeScope=runtime",
    ]
    done = subprocess.run(
        cmd, cwd=home, capture_output=True, text=True, timeout=MVN_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise KafkaFetchError(f"mvn could not resolve Kafka {version}:\n{tail}")
    marker.write_text(version + "\n")
    return libs


def classpath(libs: Path) -> str:
    return str(libs / "*")


def server_properties(port: int, controller_port: int, log_dir: Path) -> dict[str, str]:
    """A single KRaft node (broker + controller) on loopback; Kafka's defaults otherwise,
    which include no fsync per message (flush left to the OS, as kafkalite by default)."""
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        # A dynamic quorum (KIP-853) bootstrapped by `format --standalone`: Kafka 4.1.1+
        # refuses --standalone next to a static controller.quorum.voters.
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def format_storage(libs: Path, config: Path) -> None:
    """kafka-storage.sh format --standalone: a new cluster id and metadata log."""
    cmd = [
        "java",
        *TOOLS_HEAP_OPTS,
        "-cp",
        classpath(libs),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        _cluster_id(),
        "-c",
        str(config),
        "--standalone",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kafka storage format failed: {(done.stdout + done.stderr)[-1500:]}")


def _cluster_id() -> str:
    # Kafka's random-uuid: 16 random bytes, URL-safe base64 without padding (22 chars),
    # drawn again when it starts with "-" (as Kafka's Uuid.randomUuid does): the storage
    # tool would read such an id as an option.
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def broker_command(libs: Path, config: Path) -> list[str]:
    return [
        "java",
        *KAFKA_HEAP_OPTS,
        *KAFKA_JVM_OPTS,
        "-cp",
        classpath(libs),
        "kafka.Kafka",
        str(config),
    ]


def tool_command(libs: Path, main_class: str, args: list[str]) -> list[str]:
    return [
        "java",
        *TOOLS_HEAP_OPTS,
        *tools_class_archive(libs),
        "-cp",
        classpath(libs),
        main_class,
        *args,
    ]


# The JVM's own CDS messages off: a stale or foreign archive is then silently not used,
# and a tool's output stays the tool's.
_QUIET_CDS = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


@functools.cache
def tools_class_archive(libs: Path) -> list[str]:
    """JVM options that map the classes Kafka's admin tools load from a dynamic CDS
    archive, made once per JVM and jar set by one run of ``kafka-configs`` against an
    embedded broker: each later tool starts in about half the time (the tests run
    hundreds). Without java, or if the archive cannot be made, no options: the tools run
    as they are."""
    java = shutil.which("java")
    if java is None:
        return []
    real = Path(java).resolve()
    jars = sorted(p.name for p in libs.glob("*.jar"))
    key = hashlib.sha256(f"{real}:{real.stat().st_mtime_ns}:{jars}".encode()).hexdigest()[:16]
    archive = libs.parent / f"tools-{key}.jsa"
    if not archive.exists():
        _make_class_archive(libs, archive)
    return [f"-XX:SharedArchiveFile={archive}", *_QUIET_CDS] if archive.exists() else []


def _make_class_archive(libs: Path, archive: Path) -> None:
    from kafkalite import Broker

    partial = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    try:
        with Broker() as broker:
            subprocess.run(
                [
                    "java",
                    *TOOLS_HEAP_OPTS,
                    f"-XX:ArchiveClassesAtExit={partial}",
                    *_QUIET_CDS,
                    "-cp",
                    classpath(libs),
                    "kafka.admin.ConfigCommand",
                    "--bootstrap-server",
                    broker.bootstrap_servers,
                    "--describe",
                    "--entity-type",
                    "brokers",
                    "--all",
                ],
                capture_output=True,
                timeout=120,
                check=False,
            )
        if partial.exists() and partial.stat().st_size > 0:
            os.replace(partial, archive)
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        partial.unlink(missing_ok=True)
