#!/usr/bin/env bash
# Memory over a long run: tpslab offers RATE tx/s for DURATION to `tpslab
# sink` and prints its resident memory, threads and goroutines (read from
# its own Prometheus endpoint, go_goroutines) every STEP seconds, then the
# growth from the first sample after warm-up to the last. The goal is flat: < 300 MB RSS at 5000 tx/s for an hour.
#
#   bench/soak.sh                   # RATE=5000 DURATION=120s (a quick look)
#   DURATION=1h bench/soak.sh       # the full soak
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-5000}
DURATION=${DURATION:-120s}
STEP=${STEP:-10}
bin=$(pwd)/.cache/bin
mkdir -p "$bin"
go build -o "$bin/tpslab-bench" ./cmd/tpslab
work=$(mktemp -d)
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(freeport)
mport=$(freeport)
"$bin/tpslab-bench" sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null; kill $gen 2>/dev/null; true' EXIT
sleep 0.5
"$bin/tpslab-bench" run --endpoint http://127.0.0.1:$port --workload raw --rate "$RATE" --duration "$DURATION" \
  --warmup 10s --drain 0s --metrics-addr 127.0.0.1:$mport --out "$work/run" >/dev/null 2>&1 &
gen=$!
t=0
: >"$work/rss"
while kill -0 $gen 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$gen/status 2>/dev/null || echo 0)
  thr=$(awk '/Threads/ {print $2}' /proc/$gen/status 2>/dev/null || echo 0)
  gor=$(curl -s --max-time 2 http://127.0.0.1:$mport/metrics | awk '$1=="go_goroutines" {print $2}' || true)
  [ "$rss" != 0 ] && { printf "%6ds  rss %7.1f MB  threads %s  goroutines %s\n" $t "$(echo "$rss/1024" | bc -l)" "$thr" "${gor:-?}"; echo "$t $rss ${gor:-0}" >>"$work/rss"; }
  sleep "$STEP"; t=$((t + STEP))
done
wait $gen || true
python3 - "$work/rss" "$work/run/result.json" <<'PY'
import json, sys
pts = [tuple(int(float(x)) for x in l.split()) for l in open(sys.argv[1]) if l.strip()]
after = [p for p in pts if p[0] >= 20] or pts
s = json.load(open(sys.argv[2]))["summary"]
print(f"sent {s['sent']} at {s['sent_tps']:.0f}/s; RSS {after[0][1]/1024:.1f} MB at {after[0][0]} s -> {after[-1][1]/1024:.1f} MB at {after[-1][0]} s (max {max(p[1] for p in pts)/1024:.1f} MB)")
g = [p[2] for p in after if p[2]]
if g:
    print(f"goroutines {g[0]} at {after[0][0]} s -> {g[-1]} at {after[-1][0]} s (max {max(g)})")
PY
