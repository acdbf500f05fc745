#!/usr/bin/env bash
# What the gossiped stage costs on a Cosmos SDK chain: with --gossip-stage
# its nodes log every transaction a peer gossips to them (the mempool at
# debug level) and tpslab reads those lines. Two tpsd validators at RATE
# payments/s, net up without and with --gossip-stage, ROUNDS pairs
# alternating; it prints the nodes' CPU per committed payment
# (summary.cost.node_cpu_us_per_tx), tpslab's CPU, and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
export TPSLAB_ROOT=$PWD
out=$(mktemp -d)
trap '/tmp/tpslab-bench net down --home "$out/net" >/dev/null 2>&1 || true' EXIT
field() { python3 -c "import json;r=json.load(open('$1/result.json'))['summary'];print(r$2)"; }
run() { # $1 name, then net up flags
  local name=$1; shift
  /tmp/tpslab-bench net up --kind cosmos --validators 2 --home "$out/net" --reset "$@" >/dev/null 2>&1
  /tmp/tpslab-bench run --net-home "$out/net" --rate "${RATE:-150}" --duration "${DURATION:-20s}" --warmup 3s --quiet --out "$out/$name" >/dev/null 2>&1 || true
  /tmp/tpslab-bench net down --home "$out/net" >/dev/null 2>&1
}
for i in $(seq 1 "${ROUNDS:-2}"); do
  run "off-$i"
  run "on-$i" --gossip-stage
  off=$(field "$out/off-$i" "['cost']['node_cpu_us_per_tx']"); on=$(field "$out/on-$i" "['cost']['node_cpu_us_per_tx']")
  goff=$(field "$out/off-$i" "['generator']['cpu_percent']"); gon=$(field "$out/on-$i" "['generator']['cpu_percent']")
  stage=$(field "$out/on-$i" "['latency_ms'].get('gossiped',{}).get('p50',0)")
  python3 -c "print(f'pair $i: nodes {$off:.0f} -> {$on:.0f} us/payment (x{$on/$off:.3f}); tpslab {$goff:.1f}% -> {$gon:.1f}% of one core; gossiped p50 {$stage:.1f} ms')"
done
