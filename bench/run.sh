#!/usr/bin/env bash
# Every benchmark, one after the other: the core (Rust), the C header, and the JVM agent when
# it is built. Each prints per-event figures and ratios against the bare runtime measured in
# the same run. Figures vary with the machine's load: run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace -q

echo "== core"
target/release/replay-bench

if [ -f bench/c/clock.c ]; then
  echo "== C header"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cc -O2 -o "$tmp/clock" bench/c/clock.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm
  (cd "$tmp" && ./clock)
fi

if [ -f jvm-agent/bench/run.sh ] && [ -f target/release/libreplay.so ]; then
  echo "== JVM agent"
  bash jvm-agent/bench/run.sh
fi
