#!/usr/bin/env bash
# Build kafkalite once as an abi3 wheel (any CPython >= 3.11 on this platform) into dist/;
# pip then installs it, with any extras, in seconds and without a Rust toolchain:
#   pip install dist/kafkalite-*.whl
#   pip install "$(echo dist/kafkalite-*.whl)[spark]"
# Cargo's build directory (~500 MB) goes to a temporary directory removed at the end;
# set CARGO_TARGET_DIR to keep it between builds instead.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
if ! cargo --version >/dev/null 2>&1; then
  echo "scripts/build-wheel.sh: missing the Rust toolchain (cargo): install it with rustup (https://rustup.rs)" >&2
  exit 1
fi

scratch=$(mktemp -d -t kafkalite-wheel-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$scratch/target}"

# maturin from PATH, else a throwaway virtualenv (the system Python may refuse pip).
maturin=$(command -v maturin || true)
if [ -z "$maturin" ]; then
  echo "== installing maturin into a temporary virtualenv"
  python3 -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install -q --disable-pip-version-check 'maturin>=1.7,<2'
  maturin="$scratch/venv/bin/maturin"
fi

# The JVM Spark writer (jar + JNI library) goes into the wheel when this machine can build
# it (a JDK and PySpark, whose jars are its compile classpath); pyproject.toml includes the
# files.
python=${PYTHON:-python3}
if command -v javac >/dev/null 2>&1 && "$python" -c 'import pyspark' >/dev/null 2>&1; then
  echo "== building the JVM Spark writer (scripts/build-spark-jvm.sh)"
  PYTHON="$python" scripts/build-spark-jvm.sh
else
  echo "== no JDK or no pyspark for $python: the wheel gets no JVM Spark writer (format(\"kafkalite\") writes through Python)" >&2
  rm -f python/kafkalite/spark/jvm/kafkalite-spark.jar python/kafkalite/spark/jvm/libkafkalite_spark_jni.so
fi

echo "== building the wheel (release build of the Rust extension; the first takes minutes)"
started=$(date +%s)
"$maturin" build --release --out dist
wheel=$(ls -t dist/kafkalite-*.whl | head -n 1)
echo "== built $wheel in $(( $(date +%s) - started )) s; install it, with any extras, by"
echo "   pip install '$wheel'"
echo "   pip install '$wheel[spark]'     # or [bench], [test]"
