#!/usr/bin/env bash
# --health default on fresh, healthy networks: N times (default 10) a new
# 4-validator built-in network, RATE tx/s (default 1000) for DURATION
# (default 10s) with --health default, then net down. Prints each run's
# exit code and health line, and how many passed. A healthy network must
# pass every time (docs/health.md); CI runs 3 (internal/runner
# TestHealthOfTheNodes).
#
#   bench/health-fresh.sh            # N=10 RATE=1000 DURATION=10s
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10}
RATE=${RATE:-1000}
DURATION=${DURATION:-10s}
bin=$(mktemp -d)/tpslab
go build -o "$bin" ./cmd/tpslab
work=$(mktemp -d)
trap '"$bin" net down --home "$work/net" >/dev/null 2>&1 || true' EXIT
passed=0
for i in $(seq 1 "$N"); do
	"$bin" net up --validators 4 --home "$work/net" --reset >/dev/null 2>&1
	set +e
	"$bin" run --net-home "$work/net" --rate "$RATE" --duration "$DURATION" --warmup 2s \
		--health default --out "$work/run$i" >"$work/run$i.log" 2>&1
	code=$?
	set -e
	"$bin" net down --home "$work/net" >/dev/null 2>&1
	[ "$code" = 0 ] && passed=$((passed + 1))
	echo "run $i: exit $code; $(grep -m1 '^health:' "$work/run$i.log" || echo 'no health line')"
	[ "$code" = 0 ] || grep -E 'failed|✗' "$work/run$i.log" | head -5
done
echo "passed $passed of $N fresh healthy runs under --health default"
