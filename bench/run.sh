#!/usr/bin/env bash
# Every benchmark, one after the other: the core (Rust), the C header and the JVM agent. Each
# prints per-event figures and ratios against the bare runtime measured in the same run.
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

echo "== JVM agent (ns/call of a JIT-hot loop, 2 M calls a round, median of 7; thread CPU time)"
agent=$PWD/target/release/libreplay.so
for jdk in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64; do
  [ -x "$jdk/bin/java" ] || continue
  mkdir -p "$tmp/j" && "$jdk/bin/javac" -d "$tmp/j" jvm-agent/bench/NanoLoop.java
  run() { "$jdk/bin/java" "$@" -Dbench.clock=cpu -cp "$tmp/j" NanoLoop 2000000 2>/dev/null; }
  bare=$(run) rec=$(run -agentpath:"$agent"=record,log="$tmp/j.replay") rep=$(run -agentpath:"$agent"=replay,log="$tmp/j.replay")
  size=$(stat -c %s "$tmp/j.replay")
  echo "$(basename "$jdk"):"
  paste <(echo "$bare") <(echo "$rec") <(echo "$rep") | awk '{printf "  %-18s bare %5.1f  record %5.1f (%.2fx)  replay %5.1f (%.2fx)\n", $1, $2, $4, $4/$2, $6, $6/$2}'
  echo "  log: $size bytes"
done

echo "== JVM start-up (hello world, best of 5, ms)"
cat > "$tmp/Hello.java" <<'J'
public class Hello { public static void main(String[] a) { System.out.println("hello"); } }
J
for jdk in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64; do
  [ -x "$jdk/bin/java" ] || continue
  "$jdk/bin/javac" -d "$tmp" "$tmp/Hello.java"
  best() {
    local b=999999
    for _ in 1 2 3 4 5; do
      local s=$(date +%s%N); "$jdk/bin/java" "$@" -cp "$tmp" Hello >/dev/null 2>&1; local e=$(( ($(date +%s%N) - s) / 1000000 ))
      (( e < b )) && b=$e
    done
    echo $b
  }
  bare=$(best) off=$(best -agentpath:"$agent"=off) rec=$(best -agentpath:"$agent"=record,log="$tmp/h.replay")
  echo "  $(basename "$jdk"): bare $bare  agent off $off  record $rec ($(awk "BEGIN{printf \"%.2f\", $rec/$bare}")x)"
done

echo "== Node addon (ns/call of a hot loop, 5 M calls; bare, record, replay)"
if command -v node >/dev/null 2>&1; then
  cp target/release/libreplay_node.so node-addon/replay_node.node
  node node-addon/bench.js | sed 's/^/  bare:   /'
  REPLAY_MODE=record REPLAY_LOG="$tmp/n.replay" node --require ./node-addon node-addon/bench.js | sed 's/^/  record: /'
  REPLAY_MODE=replay REPLAY_LOG="$tmp/n.replay" node --require ./node-addon node-addon/bench.js | sed 's/^/  replay: /'
fi
