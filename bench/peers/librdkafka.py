"""librdkafka's own test suite (its ``tests/``, the C and C++ ``test-runner``) at v2.15.0.

GitHub's release tarballs are not reachable here; npm's ``@confluentinc/kafka-javascript``
1.10.0 bundles librdkafka 2.15.0's whole source tree, ``tests/`` included, under
``deps/librdkafka`` (the package builds it with node-gyp). ``npm pack`` fetches that
package (npm checks the registry's integrity hash; the tarball's SHA-1 is pinned here
too), only ``deps/librdkafka`` is unpacked, into the cache, and built there: librdkafka
with Debian's -dev packages (``./configure --install-deps`` needs the network; OpenSSL,
zlib, zstd and lz4 from Debian, snappy and the rest bundled; no Kerberos, no libcurl;
rapidjson-dev for the tests that read statistics, 0101 among them), then ``tests/``'s
Makefile builds ``test-runner``. Not in CI: npm, g++ and those packages are this
command's own needs (``apt-get install npm libssl-dev zlib1g-dev libzstd-dev liblz4-dev
rapidjson-dev``). No patch: the runner reads the broker
from ``test.conf`` (``RDKAFKA_TEST_CONF``), the broker version from
``TEST_KAFKA_VERSION``, the tests from ``TESTS``, and Kafka's tools from ``KAFKA_PATH``
(here scripts running Kafka 4.4.0's own TopicCommand, AclCommand, ConfigCommand).

Both brokers get what librdkafka's own cluster tooling (trivup, ``cluster_testing.py``,
``scenarios/default.json``) gives Kafka: an ACL authorizer that allows everything without
ACLs (0081 creates and deletes ACLs), 4 partitions and the cluster's replication factor
for auto-created topics, and on every broker ``broker.rack=RACK<id>`` with Kafka's
``RackAwareReplicaSelector`` (0101's fetch from follower).

0101 checks its result with a ``test_assert`` that only prints: it passes whichever broker
served the bytes. The harness reads the lines it prints (each replica's ``rxbytes`` from
the consumer's statistics) and fails it unless the preferred (rack-local) follower sent
more than every other replica; those lines are kept as the test's evidence either way.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from bench.peers.common import FAIL, FAILURE_LINES_MAX, PASS, SKIP, Outcome, SuiteError, cache_dir
from bench.peers.common import run as run_step

NPM_PACKAGE = "@confluentinc/kafka-javascript"
NPM_VERSION = "1.10.0"
NPM_SHA1 = "860e346d085ec3cbc4b52ae05ee33d08eca9bef5"
VERSION = "2.15.0"
VERSION_HEX = "0x020f00ff"  # RD_KAFKA_VERSION in src/rdkafka.h
# The broker version the runner gates tests on, for both brokers (kafkalite speaks
# Kafka 4's protocol versions and behaviour).
TEST_KAFKA_VERSION = "4.4.0"
TREE = "package/deps/librdkafka/"

# Not needed against plaintext listeners, and not installable offline by --install-deps.
CONFIGURE_ARGS = ["--disable-gssapi", "--disable-curl"]

# The runner's flags: quick mode (its tests' own shorter variants, fewer messages), no
# sockem (socket-emulation tests: they drop and delay a client's packets, the broker does
# not matter), no local tests (mock cluster or no broker at all: nothing to compare), one
# test at a time (2 cores shared with the brokers: parallel tests time out on either).
RUNNER_ARGS = ["-Q", "-E", "-L", "-p1"]
# What librdkafka's CI multiplies its timeouts by when it sees CI=... (+2 over 1.0).
TIMEOUT_MULTIPLIER = "3"

# Single nodes run the whole suite as `make quick` does (every test that needs a broker,
# each in its quick form: SUB_TEST_QUICK subtests only, fewer messages); TESTS unset. A
# test whose subtests are all slow ones passes having run none of them (the share
# consumer tests 0170-0181 and 0185 do; 0184 runs).

# Issue 39's cluster tests: an empty auto-created topic (0067), the admin API (0081),
# fetch from follower (0101); and transactions (0103), which need topics of replication
# factor 3 (on a single node it fails at its topic's creation, as 0101 does).
CLUSTER_TESTS = ["0067", "0081", "0101", "0103"]

# Broker keys trivup sets for librdkafka's default scenario, for both brokers.
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def broker_settings(replicas: int) -> dict[str, str]:
    """The keys every broker gets (trivup's server.properties and default scenario)."""
    keys = {
        "authorizer.class.name": AUTHORIZER,
        "allow.everyone.if.no.acl.found": "true",
        "num.partitions": "4",
        "default.replication.factor": str(replicas),
        "auto.create.topics.enable": "true",
        "replica.selector.class": SELECTOR,
    }
    if replicas > 1:
        # KRaft's StandardAuthorizer refuses everyone but super users until it has loaded
        # the metadata log, so a quorum of several controllers, whose requests to one
        # another come from User:ANONYMOUS on a PLAINTEXT listener, never forms without
        # this (Kafka's nodes exit). trivup ran ZooKeeper-mode Kafka, which did not need
        # it; kafkalite gets the same key.
        keys["super.users"] = "User:ANONYMOUS"
    return keys


def rack_settings(brokers: int) -> dict[int, dict[str, str]]:
    """Each broker's own rack, named as trivup names it (0101 sets client.rack=RACK<id>)."""
    return {i: {"broker.rack": f"RACK{i}"} for i in range(1, brokers + 1)}


def home() -> Path:
    return cache_dir(f"librdkafka-{VERSION}")


def _npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise SuiteError(
            f"npm is not installed (apt-get install npm): librdkafka {VERSION}'s tests come "
            f"from the npm package {NPM_PACKAGE}@{NPM_VERSION}"
        )
    return found


def fetch() -> Path:
    """librdkafka's source tree with tests/, unpacked from the npm package (once)."""
    base = home()
    src = base / "src"
    if (src / "tests" / "test.c").exists():
        return src
    tgz = base / f"confluentinc-kafka-javascript-{NPM_VERSION}.tgz"
    if not tgz.exists():
        run_step(
            [_npm(), "pack", "--silent", f"{NPM_PACKAGE}@{NPM_VERSION}", "--pack-destination",
             str(base)],
            cwd=base,
            timeout=600,
        )  # fmt: skip
    sha1 = hashlib.sha1(tgz.read_bytes()).hexdigest()
    if sha1 != NPM_SHA1:
        tgz.unlink()
        raise SuiteError(f"{tgz.name}: SHA-1 {sha1}, expected {NPM_SHA1}")
    partial = base / "src.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    with tarfile.open(tgz) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(TREE)]
        for m in members:
            m.name = m.name[len(TREE) :]
        tar.extractall(partial, members=members, filter="data")
    header = (partial / "src" / "rdkafka.h").read_text()
    if f"#define RD_KAFKA_VERSION {VERSION_HEX}" not in header:
        raise SuiteError(f"{NPM_PACKAGE}@{NPM_VERSION} does not bundle librdkafka {VERSION}")
    if not (partial / "tests" / "test.c").exists():
        raise SuiteError(f"{NPM_PACKAGE}@{NPM_VERSION} bundles no librdkafka tests/")
    partial.rename(src)
    return src


def build() -> Path:
    """``tests/test-runner`` (built only when missing; one process builds at a time)."""
    base = home()
    with (base / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        src = fetch()
        runner = src / "tests" / "test-runner"
        if runner.exists():
            return runner
        nice = ["nice", "-n", "10"]
        if not (src / "Makefile.config").exists():
            run_step([*nice, "./configure", *CONFIGURE_ARGS], cwd=src, timeout=600)
        if "#define WITH_RAPIDJSON 1" not in (src / "config.h").read_text():
            (src / "Makefile.config").unlink()  # configure again once it is installed
            raise SuiteError(
                "rapidjson is missing (apt-get install rapidjson-dev): without it 0101 "
                "(fetch from follower) compiles to a skip"
            )
        run_step([*nice, "make", "-j2", "libs"], cwd=src, timeout=3600)
        run_step([*nice, "make", "-j2", "test-runner"], cwd=src / "tests", timeout=3600)
        if not runner.exists():
            raise SuiteError(f"make test-runner built no {runner}")
        return runner


# Kafka's scripts the tests call through KAFKA_PATH, and the classes they run.
KAFKA_SCRIPTS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls.sh": "org.apache.kafka.tools.AclCommand",
    "kafka-configs.sh": "org.apache.kafka.tools.ConfigCommand",
    "kafka-run-class.sh": "",  # the class is its first argument
}


def kafka_path() -> Path:
    """What the runner's KAFKA_PATH names: a directory whose ``bin/`` scripts run Kafka
    4.4.0's own tools (from the jars the harness already runs Kafka from), as a Kafka
    distribution's scripts would. Tests alter and delete topics (0045, 0052) and add
    ACLs (0109, 0115, 0119) with them, against either broker alike."""
    from kafkalite.bench import kafka_ref

    libs = kafka_ref.ensure_jars(TEST_KAFKA_VERSION)
    bin_dir = home() / "kafka" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    heap = " ".join(kafka_ref.TOOLS_HEAP_OPTS)
    for name, main in KAFKA_SCRIPTS.items():
        script = bin_dir / name
        text = f"#!/bin/sh\nexec java {heap} -cp '{kafka_ref.classpath(libs)}' {main} \"$@\"\n"
        text = text.replace("  ", " ")
        if not script.exists() or script.read_text() != text:
            script.write_text(text)
            script.chmod(0o755)
    return bin_dir.parent


def command(tests: list[str] | None, cluster: bool) -> str:
    """The command line that reproduces a run, for the page."""
    parts = ["python -m bench.peers librdkafka"]
    if cluster:
        parts.append("--cluster")
    default = CLUSTER_TESTS if cluster else None
    if tests != default:
        parts.append(f"--run {','.join(tests or [])}")
    return " ".join(parts)


def run(
    bootstrap: str, work: Path, tests: list[str] | None, timeout_s: int = 5400
) -> dict[str, Outcome]:
    """Run `tests` (numbers, e.g. "0067"; None: all that need a broker) against
    `bootstrap`; each test's outcome. The runner's output goes to ``work/test-runner.log``."""
    runner = build()
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "test.conf"
    conf.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"test.timeout.multiplier={TIMEOUT_MULTIPLIER}\n"
        # Every run's topics are new (a broker may keep an earlier run's).
        "test.topic.random=true\n"
    )
    log = work / "test-runner.log"
    env = {
        **os.environ,
        "RDKAFKA_TEST_CONF": str(conf),
        "TEST_KAFKA_VERSION": TEST_KAFKA_VERSION,
        "KAFKA_PATH": str(kafka_path()),
        "BROKERS": bootstrap,
        "TEST_MODE": "bare",
        "TEST_LEVEL": "2",
        "TEST_REPORT": str(work / "report.json"),
        "LD_LIBRARY_PATH": f"{runner.parent.parent / 'src'}:{runner.parent.parent / 'src-cpp'}",
    }
    env.pop("CI", None)  # the timeout multiplier is set above, the same for both brokers
    env.pop("TESTS", None)
    if tests is not None:
        env["TESTS"] = ",".join(tests)
    with log.open("w") as out:
        try:
            subprocess.run(
                # Line-buffered: a failed test leaves threads behind, and the runner's
                # exit check then aborts, which would lose a buffered summary.
                ["stdbuf", "-oL", "-eL", str(runner), *RUNNER_ARGS],
                cwd=runner.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            out.write(f"\n[harness] test-runner killed after {timeout_s} s\n")
    return parse(log.read_text(errors="replace"))


ANSI = re.compile(r"\x1b\[[0-9;]*m")
SUMMARY_ROW = re.compile(r"^\|\s*(\d{4}_\S+)\s*\|\s*(\w+)\s*\|\s*[\d.]+s\s*\|(.*)$")
SAY = re.compile(r"^\[(\d{4}_\S+?)\s*/\s*[\d.]+s\]\s?(.*)$")
FAILED_AT = re.compile(r'^### Test "(\d{4}_[^" ]+)[^"]*" failed at .*: ###$')
RXBYTES = re.compile(
    r"rxbytes for replica on broker (\d+): (\d+)( \(leader\))?( \(preferred replica\))?"
)
ENDED = re.compile(
    r"^================= Test (\d{4}_\S+) (PASSED|FAILED|SKIPPED) =================$"
)
# The skip reason of a test that -L (local: mock cluster or no broker) or -E (sockem)
# filtered out.
FILTERED = "Filtered due to negative test flags"
STATES = {"PASSED": PASS, "FAILED": FAIL, "SKIPPED": SKIP, "RUNNING": FAIL}


def parse(output: str) -> dict[str, Outcome]:
    """Each test's outcome from the runner's summary table (the test's name, state and
    its first failure or skip reason), with the failure messages it printed. Without a
    summary (the runner aborted or was killed) a test's own end line says; a test that
    started and never ended failed."""
    lines = [ANSI.sub("", line).rstrip() for line in output.splitlines()]
    said: dict[str, list[str]] = {}
    failures: dict[str, list[str]] = {}
    started: list[str] = []
    ended: dict[str, str] = {}
    pending: str | None = None
    for line in lines:
        if pending is not None:
            failures.setdefault(pending, []).append(line.strip())
            pending = None
            continue
        if m := FAILED_AT.match(line):
            pending = m.group(1)
            continue
        if m := SAY.match(line):
            name, text = m.groups()
            said.setdefault(name, []).append(text)
            if text.startswith("================= Running test "):
                started.append(name)
            elif m := ENDED.match(text):
                ended[m.group(1)] = m.group(2)
    results: dict[str, Outcome] = {}
    for line in lines:
        m = SUMMARY_ROW.match(line)
        if m is None or m.group(1).startswith("<MAIN>"):
            continue
        name, state, why = m.group(1), m.group(2), m.group(3).strip()
        if state not in STATES or why == FILTERED:
            continue  # not started, or left out by the harness's -L/-E: not a result
        outcome = STATES[state]
        reason = failures.get(name) or ([why] if why else [])
        if state == "RUNNING":
            reason = ["still running when the runner ended", *reason]
        results[name] = Outcome(outcome, reason[:FAILURE_LINES_MAX] if outcome != PASS else [])
    for name in started:
        if name in results:
            continue
        state = ended.get(name)
        if state == "PASSED":
            results[name] = Outcome(PASS)
        elif state is not None:
            why = failures.get(name) or [t for t in said.get(name, []) if "SKIPPING" in t]
            results[name] = Outcome(STATES[state], why[:FAILURE_LINES_MAX])
        elif name in failures:  # a failure ends its test's thread at once
            results[name] = Outcome(FAIL, failures[name][:FAILURE_LINES_MAX])
        else:
            tail = said.get(name, [])[-6:]
            results[name] = Outcome(FAIL, ["never ended: the runner stopped first", *tail])
    if not results:
        tail = [line for line in lines if line][-8:]
        raise SuiteError("test-runner ran no test:\n" + "\n".join(tail))
    for name in list(results):
        if name.startswith("0101_") and results[name].outcome == PASS:
            results[name] = _fetch_from_follower(said.get(name, []))
    return results


def _fetch_from_follower(said: list[str]) -> Outcome:
    """0101's verdict from its own rxbytes lines: the preferred replica (on the consumer's
    rack, not the leader) must have sent more bytes than each other replica."""
    found = [m for text in said if (m := RXBYTES.search(text))]
    evidence = [m.group(0) for m in found]
    preferred = [int(m.group(2)) for m in found if m.group(4)]
    others = [int(m.group(2)) for m in found if not m.group(4)]
    if len(preferred) != 1 or not others:
        return Outcome(FAIL, ["no rxbytes lines naming a preferred replica", *evidence])
    if all(preferred[0] > b for b in others):
        return Outcome(PASS, evidence)
    return Outcome(FAIL, ["the preferred replica sent no more bytes than another", *evidence])
