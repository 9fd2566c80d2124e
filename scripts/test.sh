#!/usr/bin/env bash
# The whole test suite, from a clean clone. Needs a Rust toolchain (cargo, rustfmt, clippy);
# installs everything else itself: Debian packages when run as root (a C compiler, Python
# with venv, fio, kcat, iperf3, Java, Maven, ZooKeeper, nftables), then its own virtualenv
# `.venv` in the checkout with the extension and the Python test dependencies. Whatever it
# cannot install stops it at once with one line saying what is missing and how to get it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage names the minutes since the start: CI must stay under its 30-minute limit.
started=$SECONDS
say() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }
die() { printf 'scripts/test.sh: %s\n' "$*" >&2; exit 1; }
root() { [ "$(id -u)" = 0 ]; }

# rustup installs into ~/.cargo/bin, which a non-login shell may not have on PATH.
if [ -d "$HOME/.cargo/bin" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi

# What this script does not install: the Rust toolchain (Debian's is too old for the crates).
cargo --version >/dev/null 2>&1 ||
  die "missing the Rust toolchain (cargo, rustfmt, clippy): install it with rustup (https://rustup.rs), then rerun"
missing=()
cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
[ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: rustup component add ${missing[*]}"

# Debian packages: what building needs (a C compiler for zstd-sys, CA certificates for
# cargo and pip, Python with venv), then what tests and benches run (Java runs Spark and
# Apache Kafka, and the JDK's javac builds kafkalite's JVM Spark writer; Maven fetches
# Spark's Kafka connector).
build_debs=()
command -v cc >/dev/null 2>&1 || build_debs+=(build-essential)
[ -e /etc/ssl/certs/ca-certificates.crt ] || build_debs+=(ca-certificates)
if ! command -v python3 >/dev/null 2>&1; then
  build_debs+=(python3 python3-venv)
elif [ "$(command -v python3)" = /usr/bin/python3 ] && command -v dpkg-query >/dev/null &&
  ! dpkg-query -W -f '${Status}' python3-venv 2>/dev/null | grep -q 'ok installed'; then
  # Debian's own Python makes virtualenvs only with python3-venv (it brings pip's wheels).
  build_debs+=(python3-venv)
fi
tool_debs=()
for tool in fio:fio kcat:kcat iperf3:iperf3 java:openjdk-17-jre-headless javac:openjdk-17-jdk-headless mvn:maven; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || tool_debs+=("${tool##*:}")
done
# ZooKeeper runs the multi-broker tests (kafkalite.controller.zookeeper starts a private
# one). Debian's package rather than Maven's jars: its jar's manifest names every
# dependency, all installed and patched with the OS; Maven would need a resolver and a
# pinned list of transitive jars.
[ -e /usr/share/java/zookeeper.jar ] || tool_debs+=(zookeeper)
# The chaos tests cut a broker off the network with an nftables rule on its cgroup (and
# build their wall-clock LD_PRELOAD, kafkalite/chaos/wallclock.c, with cc from above).
command -v nft >/dev/null 2>&1 || tool_debs+=(nftables)
# The device-fault tests put a log dir on a FUSE layer (kafkalite.chaos.fusefs): fusepy
# loads libfuse.so.2.
ldconfig -p 2>/dev/null | grep -q 'libfuse\.so\.2' || tool_debs+=(libfuse2)
# Background jobs (the tools' install, the cargo stage) die with the script.
bg_pids=()
trap 'for p in "${bg_pids[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done' EXIT
tools_log=$(mktemp)
tools_pid=
if [ $(( ${#build_debs[@]} + ${#tool_debs[@]} )) -gt 0 ]; then
  if root && command -v apt-get >/dev/null; then
    apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
    say "installing Debian packages: ${build_debs[*]} ${tool_debs[*]}"
    apt-get update -qq
    [ ${#build_debs[@]} -eq 0 ] || apt_install "${build_debs[@]}"
    # The build needs none of the tools: they install (mostly downloading) while it compiles.
    if [ ${#tool_debs[@]} -gt 0 ]; then
      apt_install "${tool_debs[@]}" >"$tools_log" 2>&1 &
      tools_pid=$!
      bg_pids+=("$tools_pid")
    fi
  elif [ ${#build_debs[@]} -gt 0 ]; then
    die "missing ${build_debs[*]}: sudo apt-get install ${build_debs[*]} ${tool_debs[*]} (or run this script as root)"
  else
    echo "missing ${tool_debs[*]} and not root: tests that need them will fail" >&2
  fi
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  die "Python $(python3 -V 2>&1 | cut -d' ' -f2) is too old: kafkalite needs Python >= 3.11"

# Our own virtualenv, never the system Python (Debian's refuses pip: externally managed).
# It sees the system's site-packages, so what a machine already has is not downloaded again.
say "virtualenv .venv: building and installing kafkalite (Rust extension via maturin)"
[ -x .venv/bin/python ] || python3 -m venv --system-site-packages .venv ||
  die "python3 cannot create a virtualenv: apt-get install python3-venv"
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
# The tests measure behaviour, not speed (bench/ does that, on a wheel built with the
# release profile's fat LTO): a build without LTO takes minutes less.
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  python -m pip install -q --disable-pip-version-check ".[dev]"
# The cargo stage's compiles (clippy, and a debug build of some twenty test binaries) run
# beside pytest at idle CPU priority: the broker tests spend most of their time waiting on
# sockets and timers, so the compiles fill idle cores instead of adding minutes to CI. The
# tests themselves run after pytest at normal priority (some time a broker's answers).
cargo_log=$(mktemp)
idle=()
command -v chrt >/dev/null 2>&1 && idle=(chrt --idle 0)
# One clean build: incremental state and full debug info only cost compile and link time
# here (line tables keep panics' file:line).
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only
# Before pytest, whose two workers may reach the Spark tests within minutes: in the
# profile the extension was just built in, so it reuses those crates; its jar once the
# JDK is installed (below).
say "JVM Spark writer: JNI library"
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 PYTHON=python \
  scripts/build-spark-jvm.sh lib
say "cargo fmt / clippy / test build, in the background: $cargo_log"
(
  set -e
  cargo fmt --all -- --check
  "${idle[@]}" cargo clippy --workspace --all-targets -q -- -D warnings
  "${idle[@]}" cargo test --workspace --exclude kafkalite-py -q --no-run
) >"$cargo_log" 2>&1 &
cargo_pid=$!
bg_pids+=("$cargo_pid")
# franz-go's test binary (tests/peers runs part of its suite) builds beside it: its module
# from the Go module proxy into a cache outside the checkout, once per machine. The test
# waits for this build (a lock) instead of starting its own; a failed build is reported
# by the test.
if command -v go >/dev/null 2>&1; then
  say "franz-go test binary, in the background"
  "${idle[@]}" python -m bench.peers franz-go --build-only >/dev/null 2>&1 &
  bg_pids+=("$!")
else
  echo "go is not installed: tests/peers (franz-go's tests) will fail; install Go" >&2
fi

say "ruff"
python -m ruff check python tests bench spark
python -m ruff format --check python tests bench spark

if [ -n "$tools_pid" ]; then
  say "waiting for the Debian tools' install"
  wait "$tools_pid" || { cat "$tools_log"; die "installing ${tool_debs[*]} failed (above)"; }
fi
say "JVM Spark writer: jar"
PYTHON=python scripts/build-spark-jvm.sh jar

# Two workers, each taking a whole file at a time (a file's tests share its fixtures, and
# its brokers, ports and cgroups are its own): the broker tests mostly wait on sockets and
# timers, so two run side by side in about 13 minutes instead of 23 one after the other.
say "pytest (io engine: default), two workers"
python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --timeout 300 --durations=30 tests

say "pytest storage suite with io_uring forced off"
KAFKALITE_IO_ENGINE=pwritev python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
  --timeout 300 tests/storage

say "cargo fmt / clippy / test build: waiting for the background stage"
cargo_rc=0
wait "$cargo_pid" || cargo_rc=$?
cat "$cargo_log"
[ "$cargo_rc" -eq 0 ] || die "cargo fmt / clippy / test build failed (above)"
say "cargo test (core and broker crates)"
cargo test --workspace --exclude kafkalite-py -q
say "done"
