#!/usr/bin/env bash
# The highest rate one core of tpslab sustains in presigned mode: tpslab runs
# pinned to core 0 with GOMAXPROCS=1 against `tpslab sink` (an endpoint that
# accepts everything) pinned to core 1. For each offered rate it prints the
# ratio sent/offered and the schedule lag; the ceiling is the highest rate
# with a ratio >= 0.99 and schedule lag p99 < 100 ms.
#
#   bench/generator-ceiling.sh                          # one core, RATES up to 32000
#   RATES="200000 300000 400000" bench/generator-ceiling.sh
#   ALL_CORES=1 RATES=400000 bench/generator-ceiling.sh # tpslab and the sink unpinned, GOMAXPROCS unset
#   MODE=live ALL_CORES=1 RATES="30000 50000" bench/generator-ceiling.sh  # signing live: lanes grow to the cores
#
# Presigning comes first (about 40k signatures/s per core: a 12 s plan at
# 400k/s takes about two minutes on one core) and is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pin_sink=(taskset -c 1); pin=(env GOMAXPROCS=1 taskset -c 0)
if [ -n "${ALL_CORES:-}" ]; then pin_sink=(); pin=(); fi
"${pin_sink[@]}" /tmp/tpslab-bench sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
best=0
for rate in ${RATES:-4000 8000 12000 16000 20000 24000 28000 32000}; do
  "${pin[@]}" /tmp/tpslab-bench run --endpoint http://127.0.0.1:$port --rate $rate --duration 10s --warmup 2s \
    --drain 0s --window 1000000 --mode "${MODE:-presigned}" --out "$out/$rate" >/dev/null 2>&1 || true
  python3 - "$out/$rate/result.json" $rate <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]; rate = float(sys.argv[2])
ratio = s["sent_tps"] / rate
g = s["generator"]
lanes = f"{g.get('lanes_start')}->{g.get('lanes')}" if g.get("lanes_start") else g.get("lanes")
print(f"offered {rate:7.0f}/s  sent {s['sent_tps']:8.1f}/s  sent/offered {ratio:.3f}  lag p99 {s['latency_ms']['schedule_lag']['p99']:7.1f} ms  cpu {g['cpu_percent']:.0f}%  lanes {lanes}")
PY
  ratio=$(python3 -c "import json;r=json.load(open('$out/$rate/result.json'));print(1 if r['summary']['sent_tps']/$rate>=0.99 and r['summary']['latency_ms']['schedule_lag']['p99']<100 else 0)")
  [ "$ratio" = 1 ] && best=$rate
done
scope="one core"; [ -n "${ALL_CORES:-}" ] && scope="all cores (tpslab and the sink together)"
echo "ceiling of $scope in ${MODE:-presigned} mode: $best tx/s (highest offered rate sent at >= 99% with lag p99 < 100 ms)"
