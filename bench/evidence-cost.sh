#!/usr/bin/env bash
# What evidence.jsonl costs the generator (issue 55): tpslab with and
# without it (TPSLAB_BENCH_NO_EVIDENCE=1, a switch for this script only),
# runs alternating, the generator pinned to core 0 and the system to core 1.
#  1. against `tpslab sink` at 10,000 payments/s: the sink commits nothing,
#     so this is the cost on a path that writes no evidence (should be 0);
#  2. against a 1-validator built-in network at RATE (default 2,000/s, what
#     it commits on one core): the generator's CPU per committed payment with
#     and without, the difference scaled to 10,000 committed payments/s.
# Prints each pair, the ratio with/without, and the cost in % of one core.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
out=$(mktemp -d)
home=$out/net
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free)
taskset -c 1 /tmp/tpslab-bench sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null; TPSLAB_ROOT=$PWD /tmp/tpslab-bench net down --home $home >/dev/null 2>&1 || true' EXIT
sleep 0.5
field() { python3 -c "import json;s=json.load(open('$1/result.json'))['summary'];print(s$2)"; }
run() { # $1 out, $2 "on"|"off", then flags
  local dir=$1 mode=$2; shift 2
  local env=()
  [ "$mode" = off ] && env=(TPSLAB_BENCH_NO_EVIDENCE=1)
  env "${env[@]}" taskset -c 0 /tmp/tpslab-bench run --duration ${DURATION:-20s} --warmup 2s --quiet --out "$dir" "$@" >/dev/null 2>&1 || true
}
echo "1. against tpslab sink at 10,000/s (commits nothing)"
for i in $(seq 1 "${ROUNDS:-3}"); do
  for m in off on; do
    run "$out/sink-$m-$i" $m --endpoint http://127.0.0.1:$port --set workload.kind=raw --rate 10000 --drain 0s
  done
  off=$(field "$out/sink-off-$i" "['generator']['cpu_percent']"); on=$(field "$out/sink-on-$i" "['generator']['cpu_percent']")
  lines=$(wc -l < "$out/sink-on-$i/evidence.jsonl")
  echo "  pair $i: without ${off}%  with ${on}% of one core (ratio $(python3 -c "print(round($on/$off,3))")); evidence lines written: $lines"
done
echo "2. against a 1-validator built-in network at ${RATE:-2000}/s"
TPSLAB_ROOT=$PWD taskset -c 1 /tmp/tpslab-bench net up --validators 1 --home $home >/dev/null
costs=()
for i in $(seq 1 "${ROUNDS:-3}"); do
  for m in off on; do
    run "$out/net-$m-$i" $m --net-home $home --rate ${RATE:-2000}
  done
  read -r off_cpu off_tps < <(python3 -c "import json;s=json.load(open('$out/net-off-$i/result.json'))['summary'];print(s['generator']['cpu_percent'], s['committed_tps'])")
  read -r on_cpu on_tps < <(python3 -c "import json;s=json.load(open('$out/net-on-$i/result.json'))['summary'];print(s['generator']['cpu_percent'], s['committed_tps'])")
  bytes=$(stat -c %s "$out/net-on-$i/evidence.jsonl"); committed=$(field "$out/net-on-$i" "['committed']")
  c=$(python3 -c "print(round(($on_cpu/$on_tps-$off_cpu/$off_tps)*10000,3))")
  costs+=("$c")
  echo "  pair $i: without ${off_cpu}% at ${off_tps}/s, with ${on_cpu}% at ${on_tps}/s (CPU per committed payment, ratio $(python3 -c "print(round(($on_cpu/$on_tps)/($off_cpu/$off_tps),3))")); $bytes bytes for $committed payments ($(python3 -c "print(round($bytes/max($committed,1),1))") B each); at 10,000/s: ${c}% of one core"
done
python3 -c "import sys; d=[float(x) for x in sys.argv[1:]]; print(f'evidence cost at 10,000 committed payments/s: {sum(d)/len(d):+.2f}% of one core (mean of {len(d)} pairs; goal <= 2% of the generator)')" "${costs[@]}"
