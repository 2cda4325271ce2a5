#!/usr/bin/env bash
# File-hook figures of the JVM agent: per-call cost (ns/op, the calling thread's CPU time,
# user + system) of FileInputStream open+read+close of small files, FileInputStream.read,
# File.exists/length, Files.readAllBytes/exists/size/list (FileBench.java), bare vs record vs
# replay, each as a ratio to the bare JVM measured in the same run; median over REPEAT
# processes (each prints its median round); bytes/event of the log (`replay info`).
# Usage: jvm-agent/bench/files.sh [agent.so] [replay-cli]   (defaults: $CARGO_TARGET_DIR or
# target, release). Env: REPEAT (5), OPS (5000 per round), JDKS (17 and 25 if present).
# The machine may be shared: medians, and the bare run is interleaved with the others. The
# printed timings differ between runs, so the output is not verified (verify-output=off).
set -euo pipefail
cd "$(dirname "$0")/../.."
tgt=${CARGO_TARGET_DIR:-target}
agent=$(realpath "${1:-$tgt/release/libreplay.so}")
cli=$(realpath "${2:-$tgt/release/replay}")
REPEAT=${REPEAT:-5} OPS=${OPS:-5000}
JDKS=${JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# The files read: 16 files of 100 bytes and a directory of 10 entries, outside the class path.
data=$tmp/data
mkdir -p "$data/d"
for i in $(seq 0 15); do head -c 100 /dev/zero | tr '\0' x >"$data/f$i"; done
for i in $(seq 0 9); do : >"$data/d/e$i"; done

for jdk in $JDKS; do
  [ -x "$jdk/bin/java" ] || continue
  j=$tmp/$(basename "$jdk"); mkdir -p "$j"
  "$jdk/bin/javac" -d "$j" jvm-agent/bench/FileBench.java
  echo "== $(basename "$jdk"): file hooks, ns/op (thread CPU time, median of $REPEAT processes, $OPS ops/round)"
  bench() { "$jdk/bin/java" "$@" -cp "$j" FileBench "$data" "$OPS"; }
  for r in $(seq "$REPEAT"); do
    bench >>"$j/bare"
    bench -agentpath:"$agent"=record,log="$j/f.replay",verify-output=off >>"$j/rec"
    bench -agentpath:"$agent"=replay,log="$j/f.replay",verify-output=off >>"$j/rep"
  done
  # "<name> <ns>" lines; names have no spaces.
  fig() { awk -v k="$1" '$1 == k {print $2}' "$2" | median; }
  cut -d' ' -f1 "$j/bare" | awk '!seen[$0]++' | while read -r k; do
    b=$(fig "$k" "$j/bare"); c=$(fig "$k" "$j/rec"); p=$(fig "$k" "$j/rep")
    awk -v k="$k" -v b="$b" -v c="$c" -v p="$p" \
      'BEGIN{printf "  %-34s bare %7.0f  record %7.0f (%.2fx)  replay %7.0f (%.2fx)\n", k, b, c, c/b, p, p/b}'
  done
  if [ -x "$cli" ]; then
    "$cli" info "$j/f.replay" | awk '/^events:/{e=$2} /^size:/{s=$2} END{printf "  log: %d events in %d bytes = %.1f bytes/event\n", e, s, s/e}'
  fi
done
