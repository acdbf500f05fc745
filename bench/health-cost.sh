#!/usr/bin/env bash
# What reading the nodes' health costs (issue 56): tpslab against 4
# built-in validators at RATE (default 500/s), with and without the health
# monitor (TPSLAB_BENCH_NO_HEALTH=1, a switch for this script only), runs
# alternating, the generator pinned to core 0 and the network to core 1.
# Prints each pair's generator CPU and the difference: the monitor's cost
# in % of one core (goal: at most 1%). NET sets the network, e.g.
# and RUN adds to each run's flags, e.g.
#   NET="--kind factom --validators 3 --accounts 400 --block-time 2" RUN="--senders 400" bench/health-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
out=$(mktemp -d)
home=$out/net
trap 'TPSLAB_ROOT=$PWD /tmp/tpslab-bench net down --home $home >/dev/null 2>&1 || true' EXIT
NET=${NET:---validators 4}
TPSLAB_ROOT=$PWD taskset -c 1 /tmp/tpslab-bench net up $NET --home $home >/dev/null
cpu() { python3 -c "import json;print(json.load(open('$1/result.json'))['summary']['generator']['cpu_percent'])"; }
diffs=()
for i in $(seq 1 "${ROUNDS:-3}"); do
  TPSLAB_BENCH_NO_HEALTH=1 taskset -c 0 /tmp/tpslab-bench run --net-home $home --rate ${RATE:-500} --duration ${DURATION:-20s} --warmup 2s --quiet ${RUN:-} --out "$out/off-$i" >/dev/null 2>&1 || true
  taskset -c 0 /tmp/tpslab-bench run --net-home $home --rate ${RATE:-500} --duration ${DURATION:-20s} --warmup 2s --quiet ${RUN:-} --out "$out/on-$i" >/dev/null 2>&1 || true
  off=$(cpu "$out/off-$i"); on=$(cpu "$out/on-$i")
  d=$(python3 -c "print(round($on-$off,2))")
  diffs+=("$d")
  echo "pair $i: without ${off}%  with health ${on}%  difference ${d}% of one core"
done
python3 -c "import sys; d=[float(x) for x in sys.argv[1:]]; print(f'health reading ($NET): {sum(d)/len(d):+.2f}% of one core (mean of {len(d)} pairs; goal <= 1%)')" "${diffs[@]}"
