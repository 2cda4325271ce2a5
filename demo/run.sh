#!/usr/bin/env bash
# The replay demo: record a flaky C program until one run fails, then replay that failing
# run three times and show that it fails the same way each time.
#
#   bash demo/run.sh        (from anywhere; builds what it needs)
#
# Then the same for a race between threads: `replay hunt --chaos` records tests/c/bank.c (two
# tellers, an atomicity violation between two locked steps) until a run overdraws the account,
# and `replay replay` replays that run's interleaving three times.
#
# Work files go to target/demo/. Set DEMO_ATTEMPTS to change the bound on recorded runs
# (default 30; a run fails about one time in three).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target="$root/$target" ;; esac
out="$target/demo"
attempts=${DEMO_ATTEMPTS:-30}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Building the C front end (cargo build --release -p replay-c)"
cargo build --release -p replay-c
if ! cargo build --release -p replay-cli; then
    echo "(the replay CLI did not build; the last step will be skipped)"
fi

mkdir -p "$out"
rm -f "$out"/run-*.replay "$out"/*.out
lib="$target/release/libreplay_c.a"
cc -O2 -Wall -Wextra demo/flaky.c -I c-header/include "$lib" -lpthread -ldl -lm -o "$out/flaky"

say "Recording runs of demo/flaky.c until one fails (at most $attempts)"
failing=""
for i in $(seq 1 "$attempts"); do
    log="$out/run-$i.replay"
    set +e
    REPLAY_MODE=record REPLAY_LOG="$log" "$out/flaky" >"$out/record-$i.out" 2>&1
    status=$?
    set -e
    last=$(tail -n 1 "$out/record-$i.out")
    printf 'run %2d: exit %d  %s\n' "$i" "$status" "$last"
    if [ "$status" -ne 0 ]; then
        failing=$i
        break
    fi
    rm -f "$log" "$out/record-$i.out"
done
if [ -z "$failing" ]; then
    echo "no run failed in $attempts attempts (unlucky); run the demo again"
    exit 1
fi

log="$out/run-$failing.replay"
say "Run $failing failed. What it printed while recording:"
cat "$out/record-$failing.out"

for k in 1 2 3; do
    say "Replay $k of $log"
    set +e
    REPLAY_MODE=replay REPLAY_LOG="$log" "$out/flaky" >"$out/replay-$k.out" 2>&1
    status=$?
    set -e
    cat "$out/replay-$k.out"
    if cmp -s "$out/record-$failing.out" "$out/replay-$k.out"; then
        echo "-> exit $status, output identical to the recorded run"
    else
        echo "-> exit $status, output DIFFERS from the recorded run:"
        diff "$out/record-$failing.out" "$out/replay-$k.out" || true
        exit 1
    fi
done

say "replay info $log"
if [ -x "$target/release/replay" ]; then
    "$target/release/replay" info "$log"
else
    echo "(target/release/replay is not built; skipping the rest)"
    exit 0
fi

replay="$target/release/replay"
export REPLAY_DIR="$out/recordings"
rm -rf "$REPLAY_DIR"
cc -O2 -Wall -Wextra tests/c/bank.c -I c-header/include "$lib" -lpthread -ldl -lm -o "$out/bank"
say "A race: replay hunt --chaos -- bank (two tellers, one account; chaos perturbs the schedule)"
(cd "$out" && "$replay" hunt --chaos -n 200 -- ./bank)
for k in 1 2 3; do
    say "Replay $k of the failing interleaving: replay replay -- bank"
    set +e
    (cd "$out" && "$replay" replay -- ./bank)
    status=$?
    set -e
    echo "-> exit $status"
done
