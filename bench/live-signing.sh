#!/usr/bin/env bash
# Live signing against the bare signature of its scheme, per payment, on
# one core: Ed25519 (the built-in ledger, the ledger service), secp256k1
# (Cosmos SDK accounts; EVM wallets). "live" is the builder's whole path
# for one payment (the sender's lane and nonce, recipient and amount drawn,
# encoding, signature, transaction id); "bare" is the signature alone.
# Prints live/bare for each (goal <= 1.3) from one run of
# internal/workload's BenchmarkSigning, COUNT runs each, medians.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(taskset -c 0 go test ./internal/workload -run '^$' -bench Signing -benchtime "${BENCHTIME:-20000x}" -count "${COUNT:-5}" -cpu 1)
echo "$out" | grep '^BenchmarkSigning'
echo "$out" | python3 -c '
import sys, re, statistics
ns = {}
for line in sys.stdin:
    m = re.match(r"BenchmarkSigning/(\S+)/(bare|live)\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        ns.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(float(m.group(3)))
for scheme, v in ns.items():
    b, l = statistics.median(v["bare"]), statistics.median(v["live"])
    print(f"{scheme:18s} bare {b/1000:6.1f} us  live {l/1000:6.1f} us  live/bare {l/b:.2f}  (goal <= 1.30)")
'
