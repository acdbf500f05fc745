#!/usr/bin/env bash
# What the live dashboard costs: tpslab at 10,000 payments/s against
# `tpslab sink` (which commits nothing: only tpslab's own work counts), with
# and without --dashboard, the page's state fetched every second as the
# browser does. Runs alternate (ROUNDS pairs); it prints tpslab's CPU in
# % of one core, each pair's difference and the mean: the dashboard's cost.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 /tmp/tpslab-bench sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
cpu() { python3 -c "import json;print(json.load(open('$1/result.json'))['summary']['generator']['cpu_percent'])"; }
run() { # $1 out, then extra flags
  local dir=$1; shift
  taskset -c 0 /tmp/tpslab-bench run --endpoint http://127.0.0.1:$port --set workload.kind=raw --rate ${RATE:-10000} --duration ${DURATION:-20s} \
    --warmup 2s --drain 0s --quiet --out "$dir" "$@" >/dev/null 2>&1 || true
}
diffs=()
for i in $(seq 1 "${ROUNDS:-3}"); do
  run "$out/off-$i"
  ( for _ in $(seq 1 40); do sleep 1; curl -s "http://127.0.0.1:$dport/api/live?since=-1" >/dev/null || true; done ) &
  poll=$!
  run "$out/on-$i" --dashboard=127.0.0.1:$dport
  kill $poll 2>/dev/null || true
  off=$(cpu "$out/off-$i"); on=$(cpu "$out/on-$i")
  d=$(python3 -c "print(round($on-$off,2))")
  diffs+=("$d")
  echo "pair $i: without ${off}%  with the dashboard (polled every second) ${on}%  difference ${d}% of one core"
done
python3 -c "import sys; d=[float(x) for x in sys.argv[1:]]; print(f'dashboard cost at ${RATE:-10000}/s: {sum(d)/len(d):+.2f}% of one core (mean of {len(d)} pairs; goal <= 2%)')" "${diffs[@]}"
