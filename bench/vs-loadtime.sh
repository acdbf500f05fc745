#!/usr/bin/env bash
# tpslab against CometBFT's loadtime on the same kind of node at the same
# rate: a fresh single-validator kvstore (CometBFT's own app) for each tool,
# RATE tx/s for DURATION seconds. Prints each tool's CPU (user+system, from
# /proc after it exits) per committed payment, and the committed count read
# from the blocks for both (loadtime's own `report` reads its block store;
# tpslab's count is checked against the node's blocks by the same reader).
#
#   bench/vs-loadtime.sh            # RATE=1000 DURATION=30
#   SEND_INTERVAL=100ms bench/vs-loadtime.sh   # tpslab's gathering (default auto)
#
# loadtime sends over one WebSocket and confirms nothing while it runs: what
# committed is learned afterwards by its `report`, reading the block store.
# tpslab confirms every payment live from the blocks. So loadtime's CPU is
# printed both ways, the sender alone and the sender plus its report (the
# same work done: sending, then knowing what committed).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000}
DURATION=${DURATION:-30}
SEND_INTERVAL=${SEND_INTERVAL:-auto}
bin=$(pwd)/.cache/bin
mkdir -p "$bin"
[ -x "$bin/cometbft" ] || GOBIN=$bin go install github.com/cometbft/cometbft/cmd/cometbft@v0.38.19
[ -x "$bin/load" ] || GOBIN=$bin go install github.com/cometbft/cometbft/test/loadtime/cmd/load@v0.38.19
[ -x "$bin/report" ] || GOBIN=$bin go install github.com/cometbft/cometbft/test/loadtime/cmd/report@v0.38.19
# TPSLAB_BENCH_BIN: a tpslab to measure instead of this tree's (bench/guard.sh).
if [ -n "${TPSLAB_BENCH_BIN:-}" ]; then cp "$TPSLAB_BENCH_BIN" "$bin/tpslab-bench"; else go build -o "$bin/tpslab-bench" ./cmd/tpslab; fi
work=$(mktemp -d)
node=""
trap '[ -n "$node" ] && kill $node 2>/dev/null; true' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_node DIR: a fresh kvstore validator; sets node (pid) and rpc.
start_node() {
  "$bin/cometbft" init --home "$1" >/dev/null 2>&1
  rpc=127.0.0.1:$(port)
  "$bin/cometbft" start --home "$1" --proxy_app kvstore --rpc.laddr tcp://$rpc \
    --p2p.laddr tcp://127.0.0.1:$(port) --log_level error >"$1/node.log" 2>&1 &
  node=$!
  for _ in $(seq 100); do
    curl -s "http://$rpc/status" | grep -q '"latest_block_height":"[1-9]' && return 0
    sleep 0.2
  done
  echo "node did not start: $(tail -3 "$1/node.log")" >&2; exit 1
}
stop_node() { kill $node; wait $node 2>/dev/null || true; node=""; }

# run_timed CMD...: runs CMD (its output discarded) under /usr/bin/time and
# prints its user+system CPU in microseconds.
run_timed() {
  /usr/bin/time -f '%U %S' -o "$work/time" "$@" >/dev/null 2>&1 || true
  awk '{printf "%.0f", ($1+$2)*1e6}' "$work/time"
}

# committed_in_blocks RPC FROM TO: transactions in blocks FROM..TO with code 0.
committed_in_blocks() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys, urllib.request
rpc, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = 0
for h in range(lo, hi + 1):
    r = json.load(urllib.request.urlopen(f"http://{rpc}/block_results?height={h}"))["result"]
    n += sum(1 for t in (r.get("txs_results") or []) if t.get("code", 0) == 0)
print(n)
PY
}

echo "== tpslab: $RATE tx/s for $DURATION s, live confirmation from the blocks, send interval $SEND_INTERVAL"
start_node "$work/t"
tcpu=$(run_timed "$bin/tpslab-bench" run --endpoint "http://$rpc" --workload raw --rate "$RATE" \
  --duration "${DURATION}s" --warmup 0s --drain 10s --send-interval "$SEND_INTERVAL" --out "$work/t/run")
read -r tcommitted first last < <(python3 -c "
import json; r=json.load(open('$work/t/run/result.json')); print(r['summary']['committed'], r['chain']['first_height'], r['chain']['last_height'])")
tblocks=$(committed_in_blocks "$rpc" "$first" "$last")
stop_node
# KEEP_RUNS=DIR keeps tpslab's run as DIR/loadtime (bench/guard.sh compares them).
[ -n "${KEEP_RUNS:-}" ] && mkdir -p "$KEEP_RUNS" && cp -r "$work/t/run" "$KEEP_RUNS/loadtime"

echo "== loadtime: $RATE tx/s for $DURATION s, one WebSocket connection"
start_node "$work/l"
lcpu=$(run_timed "$bin/load" -c 1 -T "$DURATION" -r "$RATE" -s 256 --endpoints "ws://$rpc/websocket")
sleep 3
stop_node
rcpu=$(run_timed "$bin/report" --database-type goleveldb --data-dir "$work/l/data")
lcommitted=$("$bin/report" --database-type goleveldb --data-dir "$work/l/data" 2>/dev/null | awk '/Total Valid Tx/ {print $NF; exit}')
lcommitted=${lcommitted:-0}

python3 - "$tcpu" "$tcommitted" "$tblocks" "$lcpu" "$lcommitted" "$rcpu" <<'PY'
import sys
tcpu, tc, tb, lcpu, lc, rcpu = (float(x) for x in sys.argv[1:])
tper = tcpu / tc if tc else float("nan")
lper = lcpu / lc if lc else float("nan")
rper = (lcpu + rcpu) / lc if lc else float("nan")
print(f"tpslab:   {tcpu/1e6:6.2f} CPU s, committed {tc:.0f} (blocks say {tb:.0f}), {tper:7.1f} µs per committed payment")
print(f"loadtime: {lcpu/1e6:6.2f} CPU s, committed {lc:.0f} (its report, from the block store), {lper:7.1f} µs per committed payment")
print(f"loadtime + report: {(lcpu+rcpu)/1e6:6.2f} CPU s (report {rcpu/1e6:.2f}), {rper:7.1f} µs per committed payment")
print(f"ratio tpslab/loadtime CPU per committed payment: {tper/lper:.2f} (the sender alone), {tper/rper:.2f} (the sender and its report)")
PY
