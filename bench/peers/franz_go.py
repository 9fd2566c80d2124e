"""franz-go's pkg/kgo tests: the Go module from the module proxy, its test binary built
with ``go test -c``, run against an external broker as its helpers_test.go reads it
(KGO_SEEDS=host:port, KGO_TEST_RF=1 for a single node). No patch: the suite points at an
external broker by environment alone."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

from bench.peers.common import FAIL, FAILURE_LINES_MAX, PASS, SKIP, Outcome, SuiteError, cache_dir

MODULE = "github.com/twmb/franz-go"
VERSION = "v1.22.3"
# The CI subset: the transactional ETL test (a chain of consumer groups that read, and
# produce in transactions, with classic and KIP-848 members: range, cooperative-sticky,
# static) and the broker-side regex test, over fewer records than the suite's default.
# Whole tests only: the ETL subtests share a semaphore that a subtest filtered out by -run
# never releases, so filtering them hangs the run. TestGroupETL is the same chain without
# transactions (in the full run).
QUICK = r"^(TestTxnEtl|Test848RegexBrokerResolves)$"
QUICK_RECORDS = 10000
# Its four share-group tests (KIP-932; they skip a broker without ShareFetch and
# ShareAcknowledge v2): a share consumer, an ETL chain of share groups with accept,
# release and reject strategies, acknowledgements at close, and the share offsets admin
# APIs.
SHARE = r"^(TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin)$"


def go() -> str:
    found = shutil.which("go")
    if found is None:
        raise SuiteError("go is not installed: franz-go's tests are built with the Go toolchain")
    return found


def fetch() -> Path:
    """The module's source from the Go module proxy (GOPROXY), copied to a writable tree in
    the cache: the module cache is read-only and shared."""
    tree = cache_dir(f"franz-go-{VERSION}")
    src = tree / "src"
    if (src / "go.mod").exists():
        return src
    # `go mod download` outside any module: it only fills the module cache.
    out = subprocess.run(
        [go(), "mod", "download", "-json", f"{MODULE}@{VERSION}"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"},
        check=False,
    )
    try:
        info = json.loads(out.stdout)
    except json.JSONDecodeError:
        info = {}
    if out.returncode != 0 or "Dir" not in info:
        raise SuiteError(f"go mod download {MODULE}@{VERSION} failed: {out.stdout}{out.stderr}")
    partial = tree / "src.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(info["Dir"], partial)
    for path in [partial, *partial.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    partial.rename(src)
    return src


def build() -> Path:
    """The pkg/kgo test binary (built only when missing). One process builds at a time:
    another waits for it (CI builds it in the background while the tests start)."""
    tree = cache_dir(f"franz-go-{VERSION}")
    binary = tree / "kgo.test"
    with (tree / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            _go_build(fetch(), binary)
    return binary


def _go_build(src: Path, binary: Path) -> None:
    partial = binary.with_name(f"{binary.name}.{os.getpid()}.partial")
    done = subprocess.run(
        [go(), "test", "-c", "-o", str(partial), "./pkg/kgo"],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        check=False,
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SuiteError(f"go test -c ./pkg/kgo failed:\n{(done.stdout + done.stderr)[-3000:]}")
    partial.rename(binary)


def command(pattern: str | None, records: int | None) -> str:
    """The command line that reproduces a run, for the page."""
    parts = ["python -m bench.peers franz-go"]
    if pattern:
        parts.append(f"--run '{pattern}'")
    if records:
        parts.append(f"--records {records}")
    return " ".join(parts)


def run(
    bootstrap: str,
    log: Path,
    pattern: str | None = None,
    records: int | None = None,
    timeout_s: int = 3600,
) -> dict[str, Outcome]:
    """Run the test binary against `bootstrap`; every top-level test's outcome. The raw
    test2json stream goes to `log`."""
    binary = build()
    args = ["-test.v=test2json", f"-test.timeout={timeout_s}s", "-test.count=1"]
    if pattern:
        args.append(f"-test.run={pattern}")
    env = {
        **os.environ,
        "KGO_SEEDS": bootstrap,
        "KGO_TEST_RF": "1",
        "KGO_LOG_LEVEL": "none",
    }
    if records:
        env["KGO_TEST_RECORDS"] = str(records)
    with log.open("w") as out:
        subprocess.run(
            [go(), "tool", "test2json", "-t", "-p", "kgo", str(binary), *args],
            cwd=binary.parent / "src" / "pkg" / "kgo",
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=timeout_s + 120,
            check=False,
        )
    return parse(log.read_text())


def parse(stream: str) -> dict[str, Outcome]:
    """Top-level tests' outcomes from a test2json stream. A test that started but has no
    outcome (the binary panicked or timed out meanwhile) failed; its last lines say why."""
    output: dict[str, list[str]] = {}
    outcome: dict[str, str] = {}
    tail: list[str] = []
    for line in stream.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            tail.append(line)
            continue
        test = event.get("Test")
        action = event.get("Action")
        if not test:
            if action == "output":
                tail.append(event.get("Output", "").rstrip("\n"))
            continue
        top = test.split("/", 1)[0]
        if action == "run" and test == top:
            output.setdefault(top, [])
        elif action == "output":
            output.setdefault(top, []).append(event.get("Output", "").rstrip("\n"))
        elif action in ("pass", "fail", "skip") and test == top:
            outcome[top] = {"pass": PASS, "fail": FAIL, "skip": SKIP}[action]
    results: dict[str, Outcome] = {}
    for test, lines in output.items():
        verdict = outcome.get(test)
        if verdict is None:
            results[test] = Outcome(FAIL, ["no outcome: the test binary ended first", *tail[-8:]])
        elif verdict == PASS:
            results[test] = Outcome(PASS)
        else:
            results[test] = Outcome(verdict, _why(lines))
    return results


def _why(lines: list[str]) -> list[str]:
    """A failed or skipped test's own messages (`file_test.go:N: ...`), not the run's
    === RUN / --- PASS chatter."""
    kept = [
        line.strip()
        for line in lines
        if line.strip()
        and not line.lstrip().startswith(("=== ", "--- PASS", "--- SKIP"))
        # The suite's note that it keeps a failed test's topics and groups.
        and "FAILED TESTING -- NOT DELETING" not in line
    ]
    return kept[:FAILURE_LINES_MAX]
