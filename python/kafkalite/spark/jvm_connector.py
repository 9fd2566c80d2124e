"""Spark's own Kafka connector (spark-sql-kafka-0-10), fetched from Maven Central at run
time for comparisons: the tests check both sources return the same rows, the bench times
both. Never vendored; jars are cached under ~/.cache/kafkalite."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SCALA_BINARY = "2.13"  # Spark 4 is built for Scala 2.13 only
ARTIFACT = "spark-sql-kafka-0-10_" + SCALA_BINARY

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkalite.bench</groupId><artifactId>spark-kafka-fetch</artifactId>
  <version>1</version><packaging>pom</packaging>
  <dependencies><dependency>
    <groupId>org.apache.spark</groupId><artifactId>{artifact}</artifactId>
    <version>{version}</version>
  </dependency></dependencies>
</project>
"""


class ConnectorUnavailable(RuntimeError):
    """The connector could not be fetched; the message says why."""


def cache_dir(spark_version: str) -> Path:
    return Path.home() / ".cache" / "kafkalite" / f"{ARTIFACT}-{spark_version}"


def _spark_jar_names() -> set[str]:
    """Artifact names (without version) of the jars PySpark ships, so the connector's
    transitive dependencies never shadow Spark's own copies."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact_name(p.name) for p in jars.glob("*.jar")}


def _artifact_name(filename: str) -> str:
    stem = filename.removesuffix(".jar")
    parts = stem.split("-")
    # Drop the trailing version components (they start with a digit).
    while len(parts) > 1 and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


def connector_jars(spark_version: str, timeout_s: float = 600.0) -> list[Path]:
    """The connector jar and the runtime dependencies Spark lacks, fetched with `mvn` on
    first use. Raises ConnectorUnavailable (with the reason) when that is not possible."""
    target = cache_dir(spark_version)
    done = target / ".complete"
    if not done.exists():
        _fetch(spark_version, target, timeout_s)
        done.touch()
    jars = sorted(target.glob("*.jar"))
    if not any(p.name.startswith(ARTIFACT) for p in jars):
        raise ConnectorUnavailable(f"{target} holds no {ARTIFACT} jar")
    return jars


def _fetch(spark_version: str, target: Path, timeout_s: float) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConnectorUnavailable("mvn is not installed, so the Kafka connector can't be fetched")
    with tempfile.TemporaryDirectory() as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(POM.format(artifact=ARTIFACT, version=spark_version))
        staged = Path(work) / "jars"
        cmd = [
            mvn,
            "-q",
            "-B",
            "-Dstyle.color=never",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staged}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ConnectorUnavailable(f"mvn timed out after {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            # mvn colours its output even in batch mode: strip the escapes for the message.
            plain = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
            lines = [ln for ln in plain.splitlines() if "ERROR" in ln][:1]
            raise ConnectorUnavailable(
                f"mvn could not fetch org.apache.spark:{ARTIFACT}:{spark_version}: "
                + (" ".join(lines) or proc.stderr.strip()[:300])
            )
        shipped = _spark_jar_names()
        target.mkdir(parents=True, exist_ok=True)
        for jar in staged.glob("*.jar"):
            if _artifact_name(jar.name) not in shipped:
                shutil.copy2(jar, target / jar.name)
