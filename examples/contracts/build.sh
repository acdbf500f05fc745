#!/usr/bin/env bash
# Rebuilds the examples' contract artifacts (NFT.json, TestToken.json,
# Pair.json: abi and bytecode, as Hardhat writes them) from their sources
# with the npm registry's solc 0.8.28. CI uses the committed artifacts.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent solc@0.8.28 >/dev/null)
NODE_PATH="$work/node_modules" node compile.js NFT.sol Swap.sol
