#!/usr/bin/env bash
# Runs every test, including the integration tests that start real networks
# on loopback. Installs Go modules and, when missing, Debian's chromium (the
# report's browser test), postgresql (the ledger service's tests),
# prometheus (a real server scrapes a run and its nodes), and containerd,
# runc, the CNI plugins and iptables (the local Kubernetes cluster's nodes;
# Kubernetes itself is built from the Go module proxy into .cache/bin).
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null) || echo "test.sh: could not install ${need[*]}; their tests will fail" >&2
  else
    echo "test.sh: ${need[*]} missing and not root: their tests will fail" >&2
  fi
fi
go mod download
# go.mod must be tidy: a go command would otherwise rewrite it.
if ! go mod tidy -diff >/dev/null; then echo "go.mod is not tidy: run go mod tidy"; go mod tidy -diff; exit 1; fi
gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then echo "gofmt needed: $gofmt_out"; exit 1; fi
go vet ./...
(cd chains/cosmos && go vet ./...)
(cd chains/cosmosevm && go vet ./...)
go test -p 1 -count=1 -timeout 45m ./... "$@"
