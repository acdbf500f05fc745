#!/usr/bin/env bash
# The suite's own soak: runs .ci/run ROUNDS times, each on a fresh clone of
# HEAD, optionally with BUSY busy loops beside it the whole time, and prints
# one line per step per round (pass/fail and seconds), then each step's
# failures and its slowest time over the rounds: a flaky test shows here
# before it costs a submission.
#
#   bench/ci-soak.sh                 # ROUNDS=3, no busy loops
#   ROUNDS=2 BUSY=2 bench/ci-soak.sh # two rounds beside two busy loops
#
# The clones go beside this tree (so a shared/sources above it serves them
# as it serves the tree); each round's whole log stays in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BUSY=${BUSY:-0}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ci-soak.XXXXXX")}
mkdir -p "$OUT"
head=$(git rev-parse HEAD)
parent=$(dirname "$(pwd)")
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; busy=(); }
trap stop_busy EXIT
for ((k = 0; k < BUSY; k++)); do
  (while :; do :; done) &
  busy+=($!)
done
echo "ci-soak: $ROUNDS round(s) of .ci/run on $head beside $BUSY busy loop(s); logs in $OUT"
for ((r = 1; r <= ROUNDS; r++)); do
  clone="$parent/ci-soak-$r"
  rm -rf "$clone"
  git clone -q "$(pwd)" "$clone"
  git -C "$clone" checkout -q "$head"
  t0=$SECONDS
  rc=0
  (cd "$clone" && CI=true ./.ci/run) >"$OUT/round-$r.log" 2>&1 || rc=$?
  echo "round $r: exit $rc after $((SECONDS - t0)) s"
  # The table test.sh prints at its end: "NAME   SECONDSs  ok|FAIL ...".
  awk '/^--- time per step/{on=1; next} on && /^total/{exit} on' "$OUT/round-$r.log" |
    sed -E 's/^(.*[^ ]) +([0-9]+)s +(ok|FAIL).*$/\3\t\2\t\1/' | awk -v r="$r" -v tsv="$OUT/steps.tsv" -F'\t' 'NF==3{printf "  %-4s %6s s  %s\n", $1, $2, $3; print r "\t" $0 >>tsv}'
  rm -rf "$clone"
done
stop_busy
echo
echo "per step over $ROUNDS round(s): failures, slowest"
awk -F'\t' '{n[$4]++; if ($2 == "FAIL") f[$4]++; if ($3 > m[$4]) m[$4] = $3} END {for (s in n) printf "  %d/%d failed  %6d s  %s\n", f[s], n[s], m[s], s}' "$OUT/steps.tsv" | sort -k5
