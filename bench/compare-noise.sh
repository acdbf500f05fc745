#!/usr/bin/env bash
# compare's false-positive rate on real repeated runs, and its power on a
# real change (issue 51). Five sets of three runs at the same settings on
# one built-in network give ten pairs of sets: each pair compare calls
# different is a false positive. Then a set on a network with
# timeout_commit 2s (against 500ms) must be called different, runs offered
# another rate must be said to differ, and an interrupted run refused.
#
#   bench/compare-noise.sh            # about 6 minutes on 2 cores
#   SETS=5 REPS=3 DURATION=8s RATE=800 bench/compare-noise.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
t=/tmp/tpslab-bench
sets=${SETS:-5} reps=${REPS:-3} dur=${DURATION:-8s} rate=${RATE:-800}
out=$(mktemp -d)
trap '$t net down --home "$out/net" >/dev/null 2>&1; $t net down --home "$out/slow" >/dev/null 2>&1' EXIT
$t net up --validators 4 --home "$out/net" >/dev/null
for i in $(seq 1 "$sets"); do
  $t run --net-home "$out/net" --repeat "$reps" --rate "$rate" --duration "$dur" --warmup 2s --drain 5s --out "$out/set$i" >/dev/null 2>&1 || true
done
pairs=0 called=0
for i in $(seq 1 "$sets"); do
  for j in $(seq $((i + 1)) "$sets"); do
    v=$($t compare "$out/set$i" "$out/set$j" --out "$out/c.html" 2>/dev/null | grep '^verdict:' || true)
    pairs=$((pairs + 1))
    case "$v" in *"no significant difference"*) ;; *) called=$((called + 1)); echo "  set$i vs set$j: $v" ;; esac
  done
done
echo "same settings: $called of $pairs pairs of sets called different (false-positive rate $(python3 -c "print(f'{$called/$pairs:.2f}')"))"
# Singles: the first run of each set against the first of the next.
spairs=0 scalled=0
for i in $(seq 1 $((sets - 1))); do
  v=$($t compare "$out/set$i/rep-1" "$out/set$((i + 1))/rep-1" --out "$out/c.html" 2>/dev/null | grep '^verdict:' || true)
  spairs=$((spairs + 1))
  case "$v" in *"no significant difference"*) ;; *) scalled=$((scalled + 1)); echo "  single set$i vs set$((i + 1)): $v" ;; esac
done
echo "same settings, single runs: $scalled of $spairs pairs called different"
# A real change: blocks every 2 s instead of 500 ms.
$t net up --validators 4 --timeout-commit 2s --home "$out/slow" >/dev/null
$t run --net-home "$out/slow" --repeat "$reps" --rate "$rate" --duration "$dur" --warmup 2s --drain 5s --out "$out/slow-set" >/dev/null 2>&1 || true
v=$($t compare "$out/set1" "$out/slow-set" --out "$out/c.html" 2>/dev/null | grep '^verdict:' || true)
echo "timeout_commit 500ms vs 2s: $v"
# Another offered rate, on the same network: said to differ.
$t run --net-home "$out/net" --repeat "$reps" --rate $((rate / 2)) --duration "$dur" --warmup 2s --drain 5s --out "$out/half" >/dev/null 2>&1 || true
v=$($t compare "$out/set1" "$out/half" --out "$out/c.html" 2>/dev/null | grep '^verdict:' || true)
echo "offered $rate vs $((rate / 2)) tx/s: $v"
# An interrupted run: refused unless --allow-incomplete.
$t run --net-home "$out/net" --rate "$rate" --duration 30s --warmup 2s --drain 1s --out "$out/cut" >/dev/null 2>&1 &
pid=$!
sleep 8
kill -INT $pid
wait $pid || true
set +e
msg=$($t compare "$out/set1/rep-1" "$out/cut" --out "$out/c.html" 2>&1 >/dev/null)
echo "an interrupted run: exit $?: $msg"
