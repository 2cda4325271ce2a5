#!/usr/bin/env bash
# Every benchmark, one after the other: the core (Rust), the C header, the JVM agent and the
# Node addon (clocks, http, https, fs). Each prints per-event figures and ratios against the
# bare runtime measured in the same run.
# Figures vary with the machine's load: run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace -q
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== core"
target/release/replay-bench

echo "== C header (name ns/call ratio-vs-bare)"
cc -O2 -o "$tmp/clock" bench/c/clock.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm
REPLAY_MODE=record REPLAY_LOG="$tmp/c.replay" "$tmp/clock" 1000000
echo "-- replay off:"
"$tmp/clock" 1000000 2>/dev/null | grep -v sustained
echo "== C lock macros (uncontended lock/unlock pair: ns, ratio vs bare in the same process)"
cc -O2 -o "$tmp/mutex" bench/c/mutex.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm
echo "-- record:"; REPLAY_MODE=record REPLAY_LOG="$tmp/m.replay" "$tmp/mutex" 1000000
echo "-- replay:"; REPLAY_MODE=replay REPLAY_LOG="$tmp/m.replay" "$tmp/mutex" 1000000
echo "-- replay off:"; "$tmp/mutex" 1000000

echo "== JVM agent (hot-loop ns/call, log bytes/event, start-up; medians, ratios vs bare)"
jvm-agent/bench/run.sh target/release/libreplay.so target/release/replay

echo "== Node addon (ns/call of a hot loop, 5 M calls; bare, record, replay)"
if command -v node >/dev/null 2>&1; then
  cp target/release/libreplay_node.so node-addon/replay_node.node
  node node-addon/bench.js | sed 's/^/  bare:   /'
  REPLAY_MODE=record REPLAY_LOG="$tmp/n.replay" node --require ./node-addon node-addon/bench.js | sed 's/^/  record: /'
  # (verify-output=off: it prints its own timings, which differ from the recorded ones.)
  REPLAY_MODE=replay REPLAY_LOG="$tmp/n.replay" REPLAY_VERIFY_OUTPUT=off node --require ./node-addon node-addon/bench.js | sed 's/^/  replay: /'
  # The network and fs benchmarks run their client live, recorded and replayed themselves
  # (a child process each), so their ratios come from one run of this script.
  echo "== Node addon, http on loopback (ms/request: live, record, replay with the server stopped)"
  node node-addon/bench-http.js 2000 5
  echo "== Node addon, https on loopback"
  node node-addon/bench-https.js 200 3
  echo "== Node addon, fs metadata calls (ns/call: bare, record, replay)"
  node node-addon/bench-fs.js
  echo "== Node addon, output verification (100 000 console.log lines; record and replay, verify-output on / off)"
  node node-addon/bench-output.js 100000 7
fi
