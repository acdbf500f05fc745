#!/usr/bin/env bash
# The generator's own cost, before and after a change: builds tpslab at two
# revisions and runs each, alternating, ROUNDS times against `tpslab sink`
# (sink on core 1, tpslab on core 0 with GOMAXPROCS=1): presigned signed
# payments at RATE for DURATION s. Prints each run's payments per
# CPU-second of tpslab (its CPU over the load, from result.json) and the
# ratio of the medians, after/before.
#
#   bench/generator-ab.sh BEFORE [AFTER]    # AFTER defaults to the working tree
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/generator-ab.sh BEFORE [AFTER]}
after=${2:-}
RATE=${RATE:-20000} DURATION=${DURATION:-10} ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
trap 'kill $sink 2>/dev/null; git worktree remove --force "$work/before" >/dev/null 2>&1; [ -d "$work/after" ] && git worktree remove --force "$work/after" >/dev/null 2>&1; rm -rf "$work"' EXIT
git worktree add -q "$work/before" "$before"
(cd "$work/before" && go build -o "$work/tpslab-before" ./cmd/tpslab)
if [ -n "$after" ]; then
  git worktree add -q "$work/after" "$after"
  (cd "$work/after" && go build -o "$work/tpslab-after" ./cmd/tpslab)
else
  go build -o "$work/tpslab-after" ./cmd/tpslab
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 "$work/tpslab-after" sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
sleep 0.5
for r in $(seq "$ROUNDS"); do
  for v in before after; do
    GOMAXPROCS=1 taskset -c 0 "$work/tpslab-$v" run --endpoint http://127.0.0.1:$port --workload payment --mode presigned \
      --rate "$RATE" --duration "${DURATION}s" --warmup 2s --drain 0s --window 1000000 --out "$work/$v-$r" >/dev/null 2>&1
    python3 - "$work/$v-$r/result.json" "$v" "$DURATION" <<'PY' | tee -a "$work/$v.txt"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; g = s["generator"]
per = s["sent"] / (g["cpu_percent"] / 100 * float(sys.argv[3]))
print(f"{sys.argv[2]:6s} {per:9.0f} payments per CPU-second  (cpu {g['cpu_percent']:.1f}%, lag p99 {s['latency_ms']['schedule_lag']['p99']:.2f} ms)")
PY
  done
done
python3 - "$work/before.txt" "$work/after.txt" <<'PY'
import statistics, sys
med = [statistics.median(float(l.split()[1]) for l in open(f)) for f in sys.argv[1:]]
print(f"median payments per CPU-second: before {med[0]:.0f}, after {med[1]:.0f}: after/before {med[1]/med[0]:.2f}")
PY
