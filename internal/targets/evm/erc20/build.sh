#!/usr/bin/env bash
# Rebuilds Token.bin and Token.abi.json from Token.sol with the npm
# registry's solc 0.8.28 (optimizer on, 200 runs, EVM version paris: no
# PUSH0, so older forks run it too). The committed bytecode is what this
# prints; CI does not need it.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent solc@0.8.28 >/dev/null)
NODE_PATH="$work/node_modules" node compile.js Token.sol Token.bin Token.abi.json
