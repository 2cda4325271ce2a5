#!/usr/bin/env bash
# JVM agent figures, each as a ratio to the bare JVM measured in the same run:
#  - ns/call of a JIT-hot System.nanoTime / currentTimeMillis loop (NanoLoop.java, thread CPU
#    time): bare, record, replay; median over REPEAT processes (each prints its median round);
#  - bytes/event of the clock log (`replay info`);
#  - start-up of a hello world: bare, agent off, record, replay with the class cache warm
#    (what every run after the first on a JDK sees), and record/replay with the cache off
#    (`cache=off`: what the first run of a JDK pays); median of STARTS runs, wall clock and
#    CPU time (user + system of all the JVM's threads, from bash's `time`: steadier than the
#    wall clock when other work shares the machine).
# Usage: jvm-agent/bench/run.sh [agent.so] [replay-cli]   (defaults: $CARGO_TARGET_DIR or
# target, release). Env: REPEAT (5), STARTS (21), CALLS (2000000), JDKS (17 and 25 if present),
# LOOP=0 to measure start-up only.
# The machine may be shared: medians, and the bare run is interleaved with the others.
set -euo pipefail
cd "$(dirname "$0")/../.."
tgt=${CARGO_TARGET_DIR:-target}
agent=$(realpath "${1:-$tgt/release/libreplay.so}")
cli=$(realpath "${2:-$tgt/release/replay}")
REPEAT=${REPEAT:-5} STARTS=${STARTS:-21} CALLS=${CALLS:-2000000} LOOP=${LOOP:-1}
JDKS=${JDKS:-"/usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2fx", a/b}'; }

cat > "$tmp/Hello.java" <<'J'
public class Hello { public static void main(String[] a) { System.out.println("hello"); } }
J
for jdk in $JDKS; do
  [ -x "$jdk/bin/java" ] || continue
  j=$tmp/$(basename "$jdk"); mkdir -p "$j"
  "$jdk/bin/javac" -d "$j" jvm-agent/bench/NanoLoop.java "$tmp/Hello.java"
  if [ "$LOOP" != 0 ]; then
    echo "== $(basename "$jdk"): JIT-hot loop, ns/call (median of $REPEAT processes, $CALLS calls/round)"
    loop() { "$jdk/bin/java" "$@" -Dbench.clock=cpu -cp "$j" NanoLoop "$CALLS" 2>/dev/null; }
    for r in $(seq "$REPEAT"); do
      loop >>"$j/bare"
      loop -agentpath:"$agent"=record,log="$j/n.replay",verify-output=off >>"$j/rec"
      loop -agentpath:"$agent"=replay,log="$j/n.replay",verify-output=off >>"$j/rep"
    done
    for k in nanoTime currentTimeMillis; do
      b=$(grep "^$k " "$j/bare" | cut -d' ' -f2 | median)
      c=$(grep "^$k " "$j/rec" | cut -d' ' -f2 | median)
      p=$(grep "^$k " "$j/rep" | cut -d' ' -f2 | median)
      printf "  %-18s bare %5.1f  record %5.1f (%s)  replay %5.1f (%s)\n" "$k" "$b" "$c" "$(ratio "$c" "$b")" "$p" "$(ratio "$p" "$b")"
    done
    if [ -x "$cli" ]; then
      "$cli" info "$j/n.replay" | awk '/^events:/{e=$2} /^size:/{s=$2} END{printf "  log: %d events in %d bytes = %.3f bytes/event\n", e, s, s/e}'
    fi
  fi

  echo "== $(basename "$jdk"): hello-world start-up, ms (median of $STARTS, interleaved)"
  # A private class cache, warmed by this first run.
  cache=$tmp/cache
  "$jdk/bin/java" -agentpath:"$agent"=record,log="$j/h.replay",cache="$cache" -cp "$j" Hello >/dev/null
  one() {   # one <name> <jvm args>...: appends wall and CPU time, in tenths of a millisecond
    local n=$1 TIMEFORMAT="%3R %3U %3S"; shift
    { time "$jdk/bin/java" "$@" -cp "$j" Hello >/dev/null 2>&1; } 2>"$j/t"
    awk '{printf "%d\n", $1 * 10000}' "$j/t" >>"$j/s-$n"
    awk '{printf "%d\n", ($2 + $3) * 10000}' "$j/t" >>"$j/c-$n"
  }
  for r in $(seq "$STARTS"); do
    one bare
    one off -agentpath:"$agent"=off
    one rec -agentpath:"$agent"=record,log="$j/r.replay",cache="$cache"
    one rep -agentpath:"$agent"=replay,log="$j/h.replay",cache="$cache"
    one rec-cold -agentpath:"$agent"=record,log="$j/r.replay",cache=off
    one rep-cold -agentpath:"$agent"=replay,log="$j/h.replay",cache=off
  done
  b=$(median <"$j/s-bare"); o=$(median <"$j/s-off"); c=$(median <"$j/s-rec"); p=$(median <"$j/s-rep")
  cc=$(median <"$j/s-rec-cold"); pc=$(median <"$j/s-rep-cold")
  awk -v b="$b" -v o="$o" -v c="$c" -v p="$p" 'BEGIN{printf "  bare %.1f  off %.1f (+%.1f ms)  record %.1f (%.2fx)  replay %.1f (%.2fx)   [class cache warm]\n", b/10, o/10, (o-b)/10, c/10, c/b, p/10, p/b}'
  awk -v b="$b" -v c="$cc" -v p="$pc" 'BEGIN{printf "  cache off:  record %.1f (%.2fx)  replay %.1f (%.2fx)   [a JDK'"'"'s first run]\n", c/10, c/b, p/10, p/b}'
  b=$(median <"$j/c-bare"); o=$(median <"$j/c-off"); c=$(median <"$j/c-rec"); p=$(median <"$j/c-rep")
  cc=$(median <"$j/c-rec-cold"); pc=$(median <"$j/c-rep-cold")
  awk -v b="$b" -v o="$o" -v c="$c" -v p="$p" -v cc="$cc" -v pc="$pc" 'BEGIN{printf "  CPU time: bare %.0f  off %.0f  record %.0f (%.2fx)  replay %.0f (%.2fx)  cache off: record %.0f (%.2fx)  replay %.0f (%.2fx)\n", b/10, o/10, c/10, c/b, p/10, p/b, cc/10, cc/b, pc/10, pc/b}'
done

# File-hook per-call figures (FILES=0 skips them): jvm-agent/bench/files.sh.
[ "${FILES:-1}" = 0 ] || jvm-agent/bench/files.sh "$agent" "$cli"
