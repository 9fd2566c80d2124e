#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what it needs (Debian packages when
# run as root, the Rust extension and Python test deps with pip), then runs cargo's and
# pytest's suites. Fails loudly on the first error.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

need_debs=()
# Java runs Spark (and Apache Kafka in bench); Maven fetches Spark's Kafka connector.
for tool in fio:fio kcat:kcat iperf3:iperf3 java:openjdk-17-jre-headless mvn:maven; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need_debs+=("${tool##*:}")
done
if [ ${#need_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian packages: ${need_debs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_debs[@]}" >/dev/null
  else
    echo "missing ${need_debs[*]} and not root: tests that need them will fail" >&2
  fi
fi

say "building and installing kafkalite (Rust extension via maturin)"
python3 -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
python3 -m pip install -q --disable-pip-version-check ".[dev]"

say "cargo fmt / clippy / test (core and broker crates)"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test --workspace --exclude kafkalite-py -q

say "ruff"
python3 -m ruff check python tests bench spark
python3 -m ruff format --check python tests bench spark

say "pytest (io engine: default)"
python3 -m pytest -q -p no:cacheprovider --timeout 300 tests

say "pytest storage suite with io_uring forced off"
KAFKALITE_IO_ENGINE=pwritev python3 -m pytest -q -p no:cacheprovider --timeout 300 tests/storage
