#!/usr/bin/env bash
# What the factom kind's own probes cost: the sampled acknowledgements (one
# payment in 32 asked of the leader every 100 ms, 16 at most at a time) and
# factomd's P2P counters (each node's Prometheus page, read with the other
# telemetry). tpslab against a LOCAL factomd network of NODES (default 3)
# at RATE entries/s (default 300), with and without them
# (TPSLAB_BENCH_NO_FACTOM_PROBES=1, a switch for this script only), runs
# alternating, the generator pinned to core 0 and the nodes to core 1.
# Prints each pair's generator CPU and the leader's, and the differences in
# % of one core (goal: at most 1% for the generator). Needs root (a
# network namespace per node) and factomd in the cache (tpslab cache build
# factomd).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
out=$(mktemp -d)
home=$out/net
tp() { TPSLAB_ROOT=$PWD /tmp/tpslab-bench "$@"; }
trap 'tp net down --home $home >/dev/null 2>&1 || true; rm -rf $out' EXIT
taskset -c 1 env TPSLAB_ROOT=$PWD /tmp/tpslab-bench net up --kind factom --validators "${NODES:-3}" --block-time 2 --accounts 40 --home "$home" >/dev/null
field() { python3 -c "import json;r=json.load(open('$1/result.json'))['summary'];print($2)"; }
gen="r['generator']['cpu_percent']"
leader="r['telemetry']['node0.cpu_percent']['mean']"
dg=(); dl=()
for i in $(seq 1 "${ROUNDS:-3}"); do
  for mode in off on; do
    sw=0; [ $mode = off ] && sw=1
    TPSLAB_BENCH_NO_FACTOM_PROBES=$sw taskset -c 0 env TPSLAB_ROOT=$PWD /tmp/tpslab-bench run --net-home "$home" --rate "${RATE:-300}" \
      --duration "${DURATION:-20s}" --warmup 3s --senders 40 --window 64 --factom-mix entries --quiet --out "$out/$mode-$i" >/dev/null 2>&1 || true
  done
  g0=$(field "$out/off-$i" "$gen"); g1=$(field "$out/on-$i" "$gen")
  l0=$(field "$out/off-$i" "$leader"); l1=$(field "$out/on-$i" "$leader")
  c0=$(field "$out/off-$i" "round(r['committed_tps'])"); c1=$(field "$out/on-$i" "round(r['committed_tps'])")
  dg+=("$(python3 -c "print(round($g1-$g0,2))")"); dl+=("$(python3 -c "print(round($l1-$l0,2))")")
  echo "pair $i: generator ${g0}% -> ${g1}% (${dg[-1]}), leader ${l0}% -> ${l1}% (${dl[-1]}) of one core; committed ${c0} / ${c1} EPS"
done
python3 - "${dg[*]}" "${dl[*]}" <<'PY'
import sys
g = [float(x) for x in sys.argv[1].split()]
l = [float(x) for x in sys.argv[2].split()]
print(f"factom probes at the generator: {sum(g)/len(g):+.2f}% of one core; at the leader: {sum(l)/len(l):+.2f}% (mean of {len(g)} pairs; goal <= 1% at the generator)")
PY
