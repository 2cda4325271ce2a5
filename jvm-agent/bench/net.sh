#!/usr/bin/env bash
# Socket-hook figures of the JVM agent: wall time per small HTTP request over loopback
# (HttpURLConnection, keep-alive, a 5-byte body from tests/java/NetServer.java in another
# JVM; NetBench.java), bare vs record vs replay, as ratios to the bare JVM measured in the
# same run; median over REPEAT processes (each prints its median round).
# NetBench reads the clock around each round: those reads are replayed too, so the replay
# figure is computed from recorded times. It is measured here with the wall clock of the
# whole process instead (`replay wall`, all rounds plus start-up) against the recording's.
# Usage: jvm-agent/bench/net.sh [agent.so]   (default: $CARGO_TARGET_DIR or target, release).
# Env: REPEAT (5), OPS (300 per round), JDKS (17 and 25 if present), SERVER_JDK (the JDK
# running NetServer: 25 if present; JDK 17's HttpServer leaves Nagle on, and its delayed ACKs
# then cost ~40 ms a keep-alive request, which would hide everything else).
set -euo pipefail
cd "$(dirname "$0")/../.."
tgt=${CARGO_TARGET_DIR:-target}
agent=$(realpath "${1:-$tgt/release/libreplay.so}")
REPEAT=${REPEAT:-5} OPS=${OPS:-300}
JDKS=${JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
SERVER_JDK=${SERVER_JDK:-/usr/lib/jvm/temurin-25-jdk-amd64}
[ -x "$SERVER_JDK/bin/java" ] || SERVER_JDK=${JDKS%% *}
tmp=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s%N; }

for jdk in $JDKS; do
  [ -x "$jdk/bin/java" ] || continue
  j=$tmp/$(basename "$jdk"); mkdir -p "$j"
  "$jdk/bin/javac" -d "$j" jvm-agent/bench/NetBench.java
  "$SERVER_JDK/bin/javac" -d "$j/server" tests/java/NetServer.java
  mkfifo "$j/in"
  "$SERVER_JDK/bin/java" -cp "$j/server" NetServer hello <"$j/in" >"$j/port" &
  server=$!
  exec 3>"$j/in"
  for _ in $(seq 100); do [ -s "$j/port" ] && break; sleep 0.1; done
  url=http://127.0.0.1:$(cat "$j/port")/x
  echo "== $(basename "$jdk"): HttpURLConnection GET over loopback, us/request (median of $REPEAT processes, $OPS requests/round)"
  bench() { "$jdk/bin/java" "$@" -cp "$j" NetBench "$url" "$OPS"; }
  for r in $(seq "$REPEAT"); do
    bench | awk '{print $2}' >>"$j/bare"
    t0=$(now); bench -agentpath:"$agent"=record,log="$j/n.replay" | awk '{print $2}' >>"$j/rec"; t1=$(now)
    bench -agentpath:"$agent"=replay,log="$j/n.replay" >/dev/null; t2=$(now)
    echo $(( t1 - t0 )) >>"$j/recwall"; echo $(( t2 - t1 )) >>"$j/repwall"
  done
  b=$(median <"$j/bare"); c=$(median <"$j/rec")
  rw=$(median <"$j/recwall"); pw=$(median <"$j/repwall")
  awk -v b="$b" -v c="$c" -v rw="$rw" -v pw="$pw" 'BEGIN{
    printf "  request   bare %7.1f  record %7.1f (%.2fx)\n", b/1000, c/1000, c/b;
    printf "  process   record %6.0f ms  replay %6.0f ms (%.2fx the recording, no server)\n", rw/1e6, pw/1e6, pw/rw }'
  exec 3>&-
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=
done
