#!/usr/bin/env bash
# Build kafkalite's JVM Spark writer (format "kafkalite-jvm"): the JNI library
# (rust/spark-jni) and the jar (spark/jvm), both into python/kafkalite/spark/jvm/, where
# kafkalite.spark finds them (and a wheel built afterwards ships them). Needs cargo, a
# JDK (javac, jar) and PySpark, whose jars are the compile classpath.
#   scripts/build-spark-jvm.sh              # with the python3 on PATH
#   PYTHON=.venv/bin/python scripts/build-spark-jvm.sh
#   scripts/build-spark-jvm.sh lib          # only the library (cargo); `jar`: only the jar
# Cargo's profile comes from the environment, so CI builds it as it builds the extension
# (LTO off) and reuses those compiled crates.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'scripts/build-spark-jvm.sh: %s\n' "$*" >&2; exit 1; }
[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
python=${PYTHON:-python3}
what=${1:-all}
case "$what" in all | lib | jar) ;; *) die "unknown part '$what': expected lib, jar or nothing (both)" ;; esac
out=python/kafkalite/spark/jvm
mkdir -p "$out"

# Where `$python` imports kafkalite from, when that is not this checkout (a `pip install .`
# copies the package, and what is built here afterwards must reach that copy too).
installed_dir() {
  "$python" -c 'import os, kafkalite; print(os.path.join(os.path.dirname(kafkalite.__file__), "spark", "jvm"))' 2>/dev/null || true
}
# Copy `$1` to `$2` by a rename: a JVM that has the old file mapped keeps its copy.
replace() {
  cp "$1" "$2.new"
  mv "$2.new" "$2"
}
# Put `$1` (built in $out) where kafkalite is imported from, if elsewhere.
publish() {
  local dir
  dir=$(installed_dir)
  [ -n "$dir" ] && [ "$(realpath -m "$dir")" != "$(realpath -m "$out")" ] || return 0
  mkdir -p "$dir"
  replace "$out/$1" "$dir/$1"
}

if [ "$what" != jar ]; then
  command -v cargo >/dev/null 2>&1 || die "missing cargo: install Rust with rustup (https://rustup.rs)"
  cargo build --release -q -p kafkalite-spark-jni
  target_dir=${CARGO_TARGET_DIR:-$PWD/target}
  replace "$target_dir/release/libkafkalite_spark_jni.so" "$out/libkafkalite_spark_jni.so"
  publish libkafkalite_spark_jni.so
fi
[ "$what" != lib ] || { echo "built $out/libkafkalite_spark_jni.so"; exit 0; }

for tool in javac jar; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "missing $tool: the JVM writer needs a JDK (apt-get install openjdk-17-jdk-headless)"
done
spark_jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))') ||
  die "$python has no pyspark: pip install 'kafkalite[spark]' first"

classes=$(mktemp -d -t kafkalite-spark-jvm-XXXXXX)
trap 'rm -rf "$classes"' EXIT
# Java 17 bytecode: what Spark 4 runs on at least.
javac --release 17 -Xlint:all,-serial,-options,-path -Werror -d "$classes" \
  -cp "$spark_jars/*" $(find spark/jvm/src/main/java -name '*.java' | sort) 2>&1 ||
  die "javac failed (above)"
cp -R spark/jvm/src/main/resources/. "$classes/"
jar --create --file "$out/kafkalite-spark.jar.new" -C "$classes" .
mv "$out/kafkalite-spark.jar.new" "$out/kafkalite-spark.jar"
publish kafkalite-spark.jar
echo "built $out/kafkalite-spark.jar"
