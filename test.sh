#!/usr/bin/env bash
# Runs every test, including the integration tests that start real networks
# on loopback. Installs Go modules (and, for the report's browser test,
# Debian's chromium) when missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "test.sh: could not install chromium; the browser test will fail" >&2
fi
go mod download
gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then echo "gofmt needed: $gofmt_out"; exit 1; fi
go vet ./...
(cd chains/cosmos && go vet ./...)
go test -p 1 -count=1 -timeout 25m ./... "$@"
