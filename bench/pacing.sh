#!/usr/bin/env bash
# Pacing accuracy: tpslab's dispatcher at 2000/s for 10 s against an endpoint
# that answers at once. Prints achieved/target (1.000 = exact).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench PacingAccuracy -benchtime 1x ./internal/dispatch | awk '/Benchmark/ {print "achieved/target rate:", $5, "  schedule lag p99 (ms):", $7}'
