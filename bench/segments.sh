#!/usr/bin/env bash
# One generator process against N local segments (run --segments N) at the
# same scenario on the same built-in network: committed rate, p50/p99
# commit latency and the generators' CPU per committed payment, and their
# ratios. On one machine the segments share its cores with the network, so
# this measures what the spreading costs and that the merge agrees, not a
# gain; on many cores (or on Kubernetes) the segments add capacity.
#
#   bench/segments.sh              # RATE=1500 DURATION=30 N=2 VALIDATORS=1
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1500}
DURATION=${DURATION:-30}
N=${N:-2}
VALIDATORS=${VALIDATORS:-1}
bin=$(pwd)/.cache/bin
mkdir -p "$bin"
go build -o "$bin/tpslab-bench" ./cmd/tpslab
work=$(mktemp -d)
trap '"$bin/tpslab-bench" net down --home "$work/net" >/dev/null 2>&1 || true' EXIT
"$bin/tpslab-bench" net up --home "$work/net" --validators "$VALIDATORS" >/dev/null 2>&1
common=(--net-home "$work/net" --rate "$RATE" --duration "${DURATION}s" --warmup 5s --senders 2000)
"$bin/tpslab-bench" run "${common[@]}" --out "$work/one" >/dev/null 2>&1
"$bin/tpslab-bench" run "${common[@]}" --segments "$N" --out "$work/seg" >/dev/null 2>&1
python3 - "$work/one" "$work/seg" "$N" <<'PY'
import json, sys
one, seg, n = sys.argv[1], sys.argv[2], sys.argv[3]
def fig(d):
    s = json.load(open(d + "/result.json"))["summary"]
    c = s["latency_ms"]["commit"]
    return s["committed_tps"], c["p50"], c["p99"], s["cost"].get("generator_cpu_us_per_tx", 0)
a, b = fig(one), fig(seg)
print(f"{'':14}{'committed/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'gen µs/tx':>11}")
print(f"{'1 process':14}{a[0]:12.1f}{a[1]:10.1f}{a[2]:10.1f}{a[3]:11.1f}")
print(f"{n + ' segments':14}{b[0]:12.1f}{b[1]:10.1f}{b[2]:10.1f}{b[3]:11.1f}")
print(f"{'ratio':14}{b[0]/a[0]:12.3f}{b[1]/a[1]:10.3f}{b[2]/a[2]:10.3f}{(b[3]/a[3] if a[3] else 0):11.3f}")
PY
