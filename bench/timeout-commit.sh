#!/usr/bin/env bash
# Side by side: committed TPS and p99 commit latency of the built-in network
# with timeout_commit 500ms and 2s, and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/tpslab-bench ./cmd/tpslab
out=$(mktemp -d)
for tc in 500ms 2s; do
  /tmp/tpslab-bench run --rate ${RATE:-800} --duration 20s --warmup 5s --timeout-commit $tc --out "$out/$tc" >/dev/null 2>&1
done
python3 - "$out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1] + "/500ms/result.json"))["summary"]
b = json.load(open(sys.argv[1] + "/2s/result.json"))["summary"]
for k, f in (("committed_tps", lambda s: s["committed_tps"]), ("p99 commit ms", lambda s: s["latency_ms"]["commit"]["p99"])):
    print(f"{k:15s} 500ms {f(a):9.1f}   2s {f(b):9.1f}   ratio 2s/500ms {f(b)/f(a):.3f}")
PY
