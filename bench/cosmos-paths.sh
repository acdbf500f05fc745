#!/usr/bin/env bash
# tpsd with the Cosmos Hub's fee market and minting (the defaults), on 1 and
# on 4 validators: the same live load through each submission path (RPC,
# REST, gRPC) at RATE_<validators> tx/s for DURATION s, each on a fresh
# network (an overloaded chain's backlog would spill into the next run),
# and find-max over RPC on a fresh one.
# Prints committed TPS, p99 commit, ack p50 and the gas a payment used (from
# the blocks) per path, and the gRPC/REST ack p50 ratio (issue 24 asks for
# it within 2x).
#
#   bench/cosmos-paths.sh            # RATE_1=200 RATE_4=60 DURATION=20 VALIDATORS="1 4"
#   FINDMAX=0 bench/cosmos-paths.sh  # without find-max
set -euo pipefail
cd "$(dirname "$0")/.."
RATE_1=${RATE_1:-200}
RATE_4=${RATE_4:-60}
DURATION=${DURATION:-20}
VALIDATORS=${VALIDATORS:-1 4}
FINDMAX=${FINDMAX:-1}
bin=$(mktemp -d)/tpslab
go build -o "$bin" ./cmd/tpslab
work=$(mktemp -d)
home=""
trap '[ -n "$home" ] && "$bin" net down --home "$home" >/dev/null 2>&1; true' EXIT
summary() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/result.json")); s = r["summary"]; l = s["latency_ms"]
print(f"{sys.argv[2]:>2} validators  {sys.argv[3]:<5} committed {s['committed_tps']:7.1f} tx/s  p99 commit {l['commit']['p99']:7.0f} ms"
      f"  ack p50 {l['ack']['p50']:6.1f} ms  gas/payment {s.get('blocks', {}).get('gas_per_payment', 0):7.0f}"
      f"  refused {s.get('rejected_total', 0)}  expired {s.get('expired', 0)}")
PY
}
ack() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]+'/result.json'))['summary']['latency_ms']['ack']['p50'])" "$1"; }
for v in $VALIDATORS; do
  rate_var=RATE_$v
  rate=${!rate_var:-100}
  for via in rpc rest grpc; do
    home=$work/net$v-$via
    "$bin" net up --kind cosmos --validators "$v" --home "$home" >/dev/null
    "$bin" run --net-home "$home" --via $via --mode live --rate "$rate" --duration "${DURATION}s" --warmup 5s \
      --senders 1000 --out "$work/$v-$via" >/dev/null 2>&1 || true
    summary "$work/$v-$via" "$v" "$via"
    "$bin" net down --home "$home" >/dev/null
  done
  python3 -c "import sys; g,r=float(sys.argv[1]),float(sys.argv[2]); print(f'{sys.argv[3]:>2} validators  gRPC/REST ack p50 at {sys.argv[4]} tx/s: {g:.1f}/{r:.1f} ms = {g/r:.2f}x')" \
    "$(ack "$work/$v-grpc")" "$(ack "$work/$v-rest")" "$v" "$rate"
  if [ "$FINDMAX" = 1 ]; then
    home=$work/net$v-findmax
    "$bin" net up --kind cosmos --validators "$v" --home "$home" >/dev/null
    "$bin" find-max --net-home "$home" --mode live --senders 1000 --start 50 --duration 15s --step-warmup 5s \
      --out "$work/$v-findmax" 2>&1 | grep -iE "^(highest|max|found|sustain)" | sed "s/^/$v validators  find-max: /" || true
    "$bin" net down --home "$home" >/dev/null
  fi
  home=""
done
