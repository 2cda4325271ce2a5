#!/usr/bin/env bash
# The replay demo: for a flaky program in each runtime (C, Java, Node), `replay hunt` records
# runs until one fails and keeps that recording; `replay replay` then replays the failure twice
# and it fails the same way, byte for byte, each time (the launcher compares the replayed
# output with the recorded one and would exit 86 at the first difference).
#
#   bash demo/run.sh        (from anywhere; builds what it needs)
#
# Work files go to target/demo/ (recordings in target/demo/recordings). DEMO_ATTEMPTS bounds the
# recorded runs per program (default 40; each fails about one run in four). DEMO_ONLY=c|java|node
# runs one of them (or DEMO_ONLY=race, below).
#
# Then a race between threads: `replay hunt --chaos` records tests/c/bank.c (two tellers, an
# atomicity violation between two locked steps) until a run overdraws the account, and
# `replay replay` replays that run's interleaving twice.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target="$root/$target" ;; esac
out="$target/demo"
attempts=${DEMO_ATTEMPTS:-40}
only=${DEMO_ONLY:-}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Building replay (cargo build --release --workspace: CLI, C library, JVM agent, Node addon)"
cargo build --release --workspace
replay="$target/release/replay"

rm -rf "$out"
mkdir -p "$out"
export REPLAY_DIR="$out/recordings"

# hunt NAME CMD...: record until a run fails, then replay that failure twice.
hunt() {
    local name=$1
    shift
    say "$name: replay hunt -n $attempts -- $*"
    set +e
    "$replay" hunt "${hunt_opts[@]}" -n "$attempts" -- "$@" >"$out/$name-hunt.out" 2>"$out/$name-hunt.err"
    local status=$?
    set -e
    grep -v '^Picked up JAVA_TOOL_OPTIONS' "$out/$name-hunt.err" || true
    if [ "$status" -ne 0 ]; then
        echo "no run of $name failed in $attempts attempts (unlucky); run the demo again"
        return 1
    fi
    for k in 1 2; do
        say "$name: replay replay -- $* (replay $k of 2)"
        set +e
        "$replay" replay -- "$@" >"$out/$name-replay-$k.out" 2>"$out/$name-replay-$k.err"
        status=$?
        set -e
        grep -v '^Picked up JAVA_TOOL_OPTIONS' "$out/$name-replay-$k.err" || true
        cat "$out/$name-replay-$k.out"
        case $status in
            1) echo "-> exit 1, the recorded failure; output identical to the recorded run (replay compared it)" ;;
            86) echo "-> exit 86: the replay diverged (report above)"; return 1 ;;
            *) echo "-> exit $status: not the recorded failure"; return 1 ;;
        esac
    done
    cmp -s "$out/$name-replay-1.out" "$out/$name-replay-2.out" || { echo "the two replays differ"; return 1; }
}

failed=0
hunt_opts=()
if [ -z "$only" ] || [ "$only" = c ]; then
    cc -O2 -Wall -Wextra demo/flaky.c -I c-header/include "$target/release/libreplay_c.a" \
        -lpthread -ldl -lm -o "$out/flaky"
    hunt c "$out/flaky" || failed=1
fi
if [ -z "$only" ] || [ "$only" = race ]; then
    cc -O2 -Wall -Wextra tests/c/bank.c -I c-header/include "$target/release/libreplay_c.a" \
        -lpthread -ldl -lm -o "$out/bank"
    # --chaos: each run perturbs the schedule at the lock macros with a new seed, so the
    # one-in-many interleaving shows up in a few dozen runs.
    attempts_race=$attempts
    attempts=200
    hunt_opts=(--chaos)
    hunt race "$out/bank" || failed=1
    hunt_opts=()
    attempts=$attempts_race
fi
if [ -z "$only" ] || [ "$only" = java ]; then
    hunt java java demo/Flaky.java || failed=1
fi
if [ -z "$only" ] || [ "$only" = node ]; then
    hunt node node demo/flaky.js || failed=1
fi

say "replay ls (the kept recordings)"
"$replay" ls
exit "$failed"
