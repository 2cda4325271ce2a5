#!/usr/bin/env bash
# Cost of output verification in the JVM agent: a program printing LINES lines with
# System.out.println (Lines.java, stdout to /dev/null: the cheapest write, so the largest
# share for the hook), whole-process wall and CPU time (user + system of all the JVM's
# threads, from bash's `time`), median of REPEAT runs, interleaved:
#   bare            no agent
#   record off      record,verify-output=off      record on    record (writes recorded)
#   replay off      replay of the "off" log with verify-output=off (writes not intercepted)
#   replay on       replay of the "on" log (each write compared with the recorded bytes)
# The figures: record on / record off and replay on / replay off (target <= 1.05).
# Usage: jvm-agent/bench/output.sh [agent.so]   (default: $CARGO_TARGET_DIR or target,
# release). Env: REPEAT (7), LINES (100000), JDKS (17 and 25 if present).
set -euo pipefail
cd "$(dirname "$0")/../.."
tgt=${CARGO_TARGET_DIR:-target}
agent=$(realpath "${1:-$tgt/release/libreplay.so}")
REPEAT=${REPEAT:-7} LINES=${LINES:-100000}
JDKS=${JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for jdk in $JDKS; do
  [ -x "$jdk/bin/java" ] || continue
  j=$tmp/$(basename "$jdk"); mkdir -p "$j"
  "$jdk/bin/javac" -d "$j" jvm-agent/bench/Lines.java
  one() {   # one <name> <jvm args>...: appends wall and CPU time in ms
    local n=$1 TIMEFORMAT="%3R %3U %3S"; shift
    { time "$jdk/bin/java" "$@" -cp "$j" Lines "$LINES" >/dev/null 2>"$j/err"; } 2>"$j/t"
    if [ -s "$j/err" ]; then echo "$n said:" >&2; cat "$j/err" >&2; exit 1; fi
    awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$j/t" >>"$j/s-$n"
  }
  # The logs replayed below.
  one warm -agentpath:"$agent"=record,verify-output=off,log="$j/off.replay"
  one warm -agentpath:"$agent"=record,log="$j/on.replay"
  for r in $(seq "$REPEAT"); do
    one bare
    one rec-off -agentpath:"$agent"=record,verify-output=off,log="$j/r-off.replay"
    one rec-on -agentpath:"$agent"=record,log="$j/r-on.replay"
    one rep-off -agentpath:"$agent"=replay,verify-output=off,log="$j/off.replay"
    one rep-on -agentpath:"$agent"=replay,log="$j/on.replay"
  done
  echo "== $(basename "$jdk"): $LINES lines of System.out.println, ms (median of $REPEAT, wall / CPU)"
  fig() { cut -d' ' -f"$2" "$j/s-$1" | median; }
  for n in bare rec-off rec-on rep-off rep-on; do
    printf "  %-8s %6s / %6s\n" "$n" "$(fig $n 1)" "$(fig $n 2)"
  done
  ratio() { awk -v a="$(fig "$1" "$3")" -v b="$(fig "$2" "$3")" 'BEGIN{printf "%.3f", a/b}'; }
  echo "  record on/off: wall $(ratio rec-on rec-off 1)  CPU $(ratio rec-on rec-off 2)"
  echo "  replay on/off: wall $(ratio rep-on rep-off 1)  CPU $(ratio rep-on rep-off 2)"
  echo "  log size: on $(stat -c %s "$j/on.replay") bytes, off $(stat -c %s "$j/off.replay") bytes"
done
