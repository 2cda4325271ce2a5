#!/usr/bin/env bash
# Cost of the launcher's output verification on a C program printing LINES lines (one write
# per line), whole process, wall and CPU ms (user + system, bash's `time`), median of REPEAT
# runs, interleaved:
#   rec-off  replay record -k verify-output=off (the program writes to the terminal directly)
#   rec-on   replay record (the launcher copies and records stdout/stderr)
#   bare     the program alone
#   rep-on   replay replay of the rec-on recording (the launcher compares every byte)
# Figures: rec-on / rec-off and rep-on / bare (target <= 1.05).
# Usage: bench/launcher-output.sh   Env: REPEAT (9), LINES (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
R=$(realpath "${CARGO_TARGET_DIR:-target}/release/replay")
REPEAT=${REPEAT:-9} LINES=${LINES:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/lines" bench/c/lines.c
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
one() {   # one <name> <command>...: appends wall and CPU ms; stdout to a pipe, as a terminal's
  local n=$1 TIMEFORMAT="%3R %3U %3S"; shift
  { time "$@" 2>/dev/null | cat >/dev/null; } 2>"$tmp/t"
  awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$tmp/t" >>"$tmp/s-$n"
}
"$R" record --log "$tmp/on.replay" -- "$tmp/lines" "$LINES" L >/dev/null 2>&1
for r in $(seq "$REPEAT"); do
  one rec-off "$R" record -k verify-output=off --log "$tmp/off-$r.replay" -- "$tmp/lines" "$LINES" L
  one rec-on "$R" record --log "$tmp/on-$r.replay" -- "$tmp/lines" "$LINES" L
  one bare "$tmp/lines" "$LINES" L
  one rep-on "$R" replay "$tmp/on.replay" -- "$tmp/lines" "$LINES" L
done
fig() { cut -d' ' -f"$2" "$tmp/s-$1" | median; }
echo "== $LINES printf lines (line-buffered), ms (median of $REPEAT, wall / CPU)"
for n in rec-off rec-on bare rep-on; do printf "  %-8s %6s / %6s\n" "$n" "$(fig $n 1)" "$(fig $n 2)"; done
ratio() { awk -v a="$(fig "$1" "$3")" -v b="$(fig "$2" "$3")" 'BEGIN{printf "%.3f", a/b}'; }
echo "  record on/off:  wall $(ratio rec-on rec-off 1)  CPU $(ratio rec-on rec-off 2)"
echo "  replay on/bare: wall $(ratio rep-on bare 1)  CPU $(ratio rep-on bare 2)"
