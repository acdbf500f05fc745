#!/usr/bin/env bash
# The lab's own cost, guarded: builds BASE_REF and HEAD, runs
# bench/vs-loadtime.sh (CPU per committed payment at 1,000/s on CometBFT's
# kvstore, against loadtime) and bench/vs-wrk.sh (signed payments per
# CPU-second against the sink, gathered) for each, PAIRS times, the order
# alternating (base first, then head first, ...), and judges the two sets
# of tpslab runs with tpslab's own compare: its statistics, its noise
# floor and its verdict (the lab measuring itself). Each pair's lines of
# the two scripts are printed as they come.
#
#   bench/guard.sh 3e5710b            # PAIRS=3
#   PAIRS=5 bench/guard.sh HEAD~3
#
# It ends with two lines, each compare's row of one figure: vs-loadtime's
# generator_cpu_us_per_tx (CPU per committed payment, lower is better) and
# vs-wrk's generator_cpu_percent (the CPU spent sending the same 10,000
# payments a second to the sink). Exit 1 when either is "yes, worse":
# beyond compare's interval and its noise floor; 0 otherwise. Against HEAD
# itself it must say no significant change (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_REF=${1:?usage: bench/guard.sh BASE_REF}
PAIRS=${PAIRS:-3}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base-src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach -q "$work/base-src" "$BASE_REF"
mkdir -p "$work/base" "$work/head"
go build -C "$work/base-src" -o "$work/base/tpslab" ./cmd/tpslab
go build -o "$work/head/tpslab" ./cmd/tpslab
echo "guard: $BASE_REF ($(git rev-parse --short "$BASE_REF")) against HEAD ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', with changes')), $PAIRS pairs"
for ((i = 1; i <= PAIRS; i++)); do
  order="base head"
  [ $((i % 2)) = 0 ] && order="head base"
  for side in $order; do
    echo "== pair $i, $side"
    TPSLAB_BENCH_BIN="$work/$side/tpslab" KEEP_RUNS="$work/keep" bench/vs-loadtime.sh | grep -E '^(tpslab|loadtime|ratio)'
    TPSLAB_BENCH_BIN="$work/$side/tpslab" KEEP_RUNS="$work/keep" RATES=10000 SEND_INTERVALS=auto WORKLOADS=payment PEERS=0 bench/vs-wrk.sh | grep -E '^tpslab'
    mkdir -p "$work/sets/$side-loadtime" "$work/sets/$side-wrk"
    mv "$work/keep/loadtime" "$work/sets/$side-loadtime/rep-$i"
    mv "$work/keep/wrk-payment-10000-auto" "$work/sets/$side-wrk/rep-$i"
  done
done
# The generator's own figures are shown by compare, not voted on (they are
# no property of the system measured): the guard reads their rows.
rc=0
judge() { # WHAT ROW
  local line
  line=$(grep -E "^$2 " "$work/$1.txt" || true)
  echo "guard: $1: ${line:-no $2 row}"
  case "$line" in *"yes, worse"*) echo "guard: $1: HEAD costs more beyond the noise"; rc=1 ;; esac
}
for what in loadtime wrk; do
  echo
  echo "== $what: base ($BASE_REF) against head, by tpslab compare"
  "$work/head/tpslab" compare "$work/sets/base-$what" "$work/sets/head-$what" --all --out "$work/$what.html" | tee "$work/$what.txt" || true
done
echo
judge loadtime 'generator_cpu_us_per_tx'
judge wrk 'generator_cpu_percent'
exit $rc
