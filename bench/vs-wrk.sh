#!/usr/bin/env bash
# The generator alone: tpslab, Debian's wrk, vegeta (built once from the Go
# module proxy into .cache/bin) and wrk2 when installed send the same
# JSON-RPC broadcast_tx_sync POST to `tpslab sink`. The sink
# runs on core 1, the tool on core 0 (GOMAXPROCS=1 for tpslab). Prints each
# tool's requests per CPU-second and the ratio (wrk's CPU from /usr/bin/time;
# tpslab's over the load, from result.json: not its start or presigning).
# tpslab runs open-loop at each RATE; wrk is closed-loop (as fast as it
# can) and paced near RATE (below), wrk2 and vegeta open-loop at the same RATE. vegeta runs with -cpus 1
# and -max-workers 64 (with its unbounded default it collapsed to 277
# requests/s at 20k/s on one core) and writes its results to a file, read
# after. tpslab runs at each of
# SEND_INTERVALS: 0 sends one request per payment (the like-for-like
# figure against wrk); auto gathers due payments into JSON-RPC batches
# (docs/metrics.md, Gathering), so its figure is payments per CPU-second.
# WORKLOADS: raw (one fixed-size unsigned body, like wrk's) and payment
# (signed presigned payments of the built-in ledger, gathered: issue 37's
# figure, only with send interval auto).
#
#   bench/vs-wrk.sh     # RATES="10000 20000" DURATION=10 SEND_INTERVALS="0 auto" WORKLOADS="raw payment"
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-10000 20000}
DURATION=${DURATION:-10}
SEND_INTERVALS=${SEND_INTERVALS:-0 auto}
WORKLOADS=${WORKLOADS:-raw payment}
[ "${PEERS:-1}" = 0 ] || command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 2; }
bin=$(pwd)/.cache/bin
mkdir -p "$bin"
# TPSLAB_BENCH_BIN: a tpslab to measure instead of this tree's (bench/guard.sh).
if [ -n "${TPSLAB_BENCH_BIN:-}" ]; then cp "$TPSLAB_BENCH_BIN" "$bin/tpslab-bench"; else go build -o "$bin/tpslab-bench" ./cmd/tpslab; fi
[ "${PEERS:-1}" = 0 ] || [ -x "$bin/vegeta" ] || GOBIN="$bin" go install github.com/tsenart/vegeta/v12@v12.13.0
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 "$bin/tpslab-bench" sink --listen 127.0.0.1:$port 2>/dev/null &
sink=$!
trap 'kill $sink 2>/dev/null' EXIT
sleep 0.5
tx=$(python3 -c 'import base64; print(base64.b64encode(b"k"*100).decode())')
cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"broadcast_tx_sync","params":{"tx":"$tx"}}'
EOF
cpu() { awk '{printf "%.3f", $1+$2}' "$work/time"; }

for wl in $WORKLOADS; do
for iv in $SEND_INTERVALS; do
[ "$wl" = payment ] && [ "$iv" != auto ] && continue
for rate in $RATES; do
  mode=(); [ "$wl" = payment ] && mode=(--mode presigned)
  # CPU over the load alone (result.json), not the presigning before it.
  GOMAXPROCS=1 taskset -c 0 "$bin/tpslab-bench" run --endpoint http://127.0.0.1:$port \
    --workload "$wl" "${mode[@]}" --rate "$rate" --duration "${DURATION}s" --warmup 2s --drain 0s --window 1000000 --send-interval "$iv" \
    --out "$work/t-$wl-$rate-$iv" >/dev/null 2>&1 || true
  read -r sent lag tcpu < <(python3 -c "
import json; s=json.load(open('$work/t-$wl-$rate-$iv/result.json'))['summary']; print(s['sent'], s['latency_ms']['schedule_lag']['p99'], round(s['generator']['cpu_percent']/100*$DURATION, 3))")
  echo "tpslab  $wl, rate $rate/s, send interval $iv: sent $sent in ${DURATION}s using $tcpu CPU s: $(python3 -c "print(round($sent/$tcpu))") payments per CPU-second; schedule lag p99 $lag ms"
  echo "$wl $rate $iv $sent $tcpu" >>"$work/tpslab"
  # KEEP_RUNS=DIR keeps each tpslab run as DIR/wrk-WORKLOAD-RATE-INTERVAL (bench/guard.sh).
  [ -n "${KEEP_RUNS:-}" ] && mkdir -p "$KEEP_RUNS" && cp -r "$work/t-$wl-$rate-$iv" "$KEEP_RUNS/wrk-$wl-$rate-$iv"
done
done
done

# PEERS=0: tpslab's runs alone (bench/guard.sh compares tpslab with itself).
[ "${PEERS:-1}" = 0 ] && exit 0
/usr/bin/time -f '%U %S' -o "$work/time" taskset -c 0 wrk -t1 -c32 -d"${DURATION}s" -s "$work/post.lua" http://127.0.0.1:$port/ >"$work/wrk.out" 2>&1 || true
wcpu=$(cpu)
wreq=$(awk '/requests in/ {print $1}' "$work/wrk.out")
echo "wrk (closed loop, 32 connections): $wreq requests in ${DURATION}s using $wcpu CPU s: $(python3 -c "print(round($wreq/$wcpu))") requests per CPU-second"
# wrk paced: the closest to wrk2 this machine has. Each connection waits
# 2 ms (wrk's Lua delay(), whole milliseconds) after each answer before its
# next request: about 400 requests/s each (measured; the timer is coarse),
# so RATE/400 connections send near RATE requests/s, each request waiting
# on a timer as wrk2's schedule does. One Lua call per request is the cost
# wrk2 does not have.
cp "$work/post.lua" "$work/paced.lua"
echo 'function delay() return 2 end' >>"$work/paced.lua"
for rate in $RATES; do
  /usr/bin/time -f '%U %S' -o "$work/time" taskset -c 0 wrk -t1 -c$((rate / 400)) -d"${DURATION}s" -s "$work/paced.lua" http://127.0.0.1:$port/ >"$work/paced.out" 2>&1 || true
  pcpu=$(cpu)
  preq=$(awk '/requests in/ {print $1}' "$work/paced.out")
  echo "wrk paced (2 ms after each answer, $((rate / 400)) connections) near $rate/s: $preq requests in ${DURATION}s using $pcpu CPU s: $(python3 -c "print(round($preq/$pcpu))") requests per CPU-second"
  echo "$rate $preq $pcpu" >>"$work/paced"
done
printf '{"jsonrpc":"2.0","id":1,"method":"broadcast_tx_sync","params":{"tx":"%s"}}' "$tx" >"$work/body.json"
for rate in $RATES; do
  echo "POST http://127.0.0.1:$port/" | /usr/bin/time -f '%U %S' -o "$work/time" taskset -c 0 "$bin/vegeta" -cpus 1 attack -max-workers 64 \
    -rate "$rate" -duration "${DURATION}s" -body "$work/body.json" -header 'Content-Type: application/json' -output "$work/vegeta-$rate.bin" 2>/dev/null || true
  vcpu=$(cpu)
  vreq=$("$bin/vegeta" report -type json "$work/vegeta-$rate.bin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
  echo "vegeta (open loop) rate $rate/s: $vreq requests in ${DURATION}s using $vcpu CPU s: $(python3 -c "print(round($vreq/$vcpu))") requests per CPU-second"
  echo "$rate $vreq $vcpu" >>"$work/vegeta"
done
if command -v wrk2 >/dev/null; then
  for rate in $RATES; do
    /usr/bin/time -f '%U %S' -o "$work/time" taskset -c 0 wrk2 -t1 -c32 -d"${DURATION}s" -R"$rate" -s "$work/post.lua" http://127.0.0.1:$port/ >"$work/wrk2.out" 2>&1 || true
    w2=$(awk '/requests in/ {print $1}' "$work/wrk2.out")
    w2cpu=$(cpu)
    echo "wrk2 rate $rate/s: $w2 requests in ${DURATION}s using $w2cpu CPU s: $(python3 -c "print(round($w2/$w2cpu))") requests per CPU-second"
    echo "$rate $w2 $w2cpu" >>"$work/wrk2"
  done
else
  echo "wrk2 not installed (not packaged in Debian): skipped"
fi
while read -r wl rate iv sent tcpu; do
  python3 -c "print(f'ratio tpslab $wl (send interval $iv)/wrk per CPU-second at $rate/s: {($sent/$tcpu)/($wreq/$wcpu):.2f}')"
  read -r _ vreq vcpu < <(grep "^$rate " "$work/vegeta")
  python3 -c "print(f'ratio tpslab $wl (send interval $iv)/vegeta per CPU-second at $rate/s: {($sent/$tcpu)/($vreq/$vcpu):.2f}')"
  read -r _ preq pcpu < <(grep "^$rate " "$work/paced")
  python3 -c "print(f'ratio tpslab $wl (send interval $iv)/wrk paced per CPU-second at $rate/s: {($sent/$tcpu)/($preq/$pcpu):.2f}')"
  if [ -s "$work/wrk2" ]; then
    read -r _ w2 w2cpu < <(grep "^$rate " "$work/wrk2")
    python3 -c "print(f'ratio tpslab $wl (send interval $iv)/wrk2 per CPU-second at $rate/s: {($sent/$tcpu)/($w2/$w2cpu):.2f}')"
  fi
done <"$work/tpslab"
