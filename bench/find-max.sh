#!/usr/bin/env bash
# find-max's wall time on a 1-validator built-in network with default
# settings (its own 10 s confirmation run included), then the check: a 20 s
# run at the rate it names must meet the same objective (p99 commit <= 2 s,
# committed/offered >= 0.99). Prints the search's time, the named rate,
# whether its confirmation held it, and the check run's figures.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
home=$(mktemp -d); out=$(mktemp -d)
trap '/tmp/tpslab-bench net down --home "$home" >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
/tmp/tpslab-bench net up --validators 1 --home "$home" --reset >/dev/null 2>&1
start=$(date +%s.%N)
/tmp/tpslab-bench find-max --net-home "$home" --out "$out/fm" ${FINDMAX_FLAGS:-} > "$out/fm.txt" 2>/dev/null || true
took=$(python3 -c "import time; print(round(time.time()-$start,1))")
rate=$(python3 -c "import json; print(int(json.load(open('$out/fm/find-max.json'))['outcome']['sustainable_rate']))")
grep -E "^(sustainable rate|stopped)" "$out/fm.txt"
echo "find-max took ${took} s (goal <= 60 s), named ${rate} tx/s"
code=0
/tmp/tpslab-bench run --net-home "$home" --rate "$rate" --duration 20s --warmup 3s --quiet --out "$out/check" \
  --threshold 'p99_commit<=2s' --threshold 'committed_tps>='"$(python3 -c "print($rate*0.99)")" >/dev/null 2>&1 || code=$?
python3 - "$out/check/result.json" "$rate" "$code" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
ok = "met" if sys.argv[3] == "0" else "MISSED"
print(f"check run at {sys.argv[2]} tx/s for 20 s: committed {s['committed_tps']:.1f} tx/s, p99 commit {s['latency_ms']['commit']['p99']:.0f} ms: {ok}")
PY
