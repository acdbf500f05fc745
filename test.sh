#!/usr/bin/env bash
# Runs the tests and prints a table of each step's wall time at the end.
#
#   ./test.sh          every test: unit, fuzz seeds, and the integration
#                      tests that start real networks on loopback; the local
#                      Kubernetes test last, as its own step
#   ./test.sh -short   unit and in-process tests only: no network, database
#                      or cluster starts (under a minute)
#
# Extra arguments go to every `go test`. The full tier installs, when
# missing, Debian's chromium (the report's browser test), postgresql (the
# ledger service), prometheus (a real server scrapes a run), containerd,
# runc, the CNI plugins and iptables (the local cluster's nodes), and the
# GNU Taler exchange's build dependencies. External programs (tpsd,
# tpsevmd, geth, the Taler exchange, Kubernetes) are built once into the shared
# cache (`tpslab cache`, ${XDG_CACHE_HOME:-~/.cache}/tpslab), in the
# background while the first packages run; tpslab itself is built once and
# handed to every package (TPSLAB_TEST_BIN). Tests write only under a
# temporary folder that is removed at the end.
set -uo pipefail
cd "$(dirname "$0")"
root=$(pwd)
short=false
if [ "${1:-}" = -short ]; then
  short=true
  shift
fi

export TMPDIR
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/tpslab-test.XXXXXX")
# Every network a test creates is logged here (internal/testnet), and
# counted in the table.
export TPSLAB_NETWORK_LOG=$TMPDIR/networks.log
rows=()
failed=()
failed_logs=()
t_start=$SECONDS

. "$root/.ci/steps.sh"

# The end of each failed step's output again after the table: a reader
# who sees only the head and the tail of a long log still sees why.
tails() {
  local log
  for log in "${failed_logs[@]}"; do
    echo "--- the last lines of a failed step's output ($log)"
    grep -v '^[[:space:]]*$' "$log" | tail -n 40
  done
}

bg_pid=""
finish() {
  if [ -n "$bg_pid" ] && kill -0 "$bg_pid" 2>/dev/null; then kill -- "-$bg_pid" 2>/dev/null || kill "$bg_pid" 2>/dev/null; fi
  if [ -n "${beside_pid:-}" ] && kill -0 "$beside_pid" 2>/dev/null; then pkill -P "$beside_pid" 2>/dev/null; kill "$beside_pid" 2>/dev/null; fi
  # A test that failed half-way may leave a small disk mounted or a file.
  grep -o " $TMPDIR/[^ ]*" /proc/mounts 2>/dev/null | while read -r m; do umount "$m" 2>/dev/null; done
  local left
  left=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 ! -name bin ! -name 'bg.*' ! -name 'beside.*' ! -name networks.log ! -name 'step.*' 2>/dev/null)
  [ -n "$left" ] && echo "test.sh: tests left $(echo "$left" | wc -l) entries in $TMPDIR (removed now):" && echo "$left" | head -5
  rm -rf "$TMPDIR"
}
trap finish EXIT

table() {
  echo
  echo "--- time per step ($([ "$short" = true ] && echo short || echo full) tier)"
  printf '%s\n' "${rows[@]}"
  printf '%-44s %6ss\n' "total" $((SECONDS - t_start))
  if [ -s "$TPSLAB_NETWORK_LOG" ]; then
    echo "networks started: $(wc -l <"$TPSLAB_NETWORK_LOG") ($(awk '{print ($1 == "-" || $1 == "builtin" ? "built-in" : $1)}' "$TPSLAB_NETWORK_LOG" | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep=", "}'))"
  fi
}

checks() {
  go mod download || return 1
  # go.mod must be tidy: a go command would otherwise rewrite it. -e: the
  # Factom client library's own tests import factomd, which the module
  # proxy does not serve; tidy names them and goes on (tpslab imports
  # neither those tests nor factomd).
  if ! go mod tidy -e -diff >/dev/null 2>&1; then echo "go.mod is not tidy: run go mod tidy -e"; go mod tidy -e -diff; return 1; fi
  local out
  out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$out" ]; then echo "gofmt needed: $out"; return 1; fi
}

if [ "$short" = true ]; then
  step "checks (tidy, gofmt)" checks
  step "vet" go vet ./...
  step "go test -short ./..." go test -short -count=1 ./... "$@"
  table
  [ ${#failed[@]} -eq 0 ] || { echo "FAILED: ${failed[*]}"; exit 1; }
  exit 0
fi

packages() {
  local need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  # factomd's nodes each run in a network namespace (ip netns).
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  # The GNU Taler exchange's build (internal/testnet/talernet: Packages).
  local p
  for p in libgnunet-dev libmicrohttpd-dev libjansson-dev libsodium-dev libgcrypt20-dev libcurl4-gnutls-dev libpq-dev \
    autoconf automake libtool autopoint gettext pkg-config recutils libunistring-dev zlib1g-dev libltdl-dev make gcc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$' || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null) || echo "test.sh: could not install ${need[*]}; their tests will fail" >&2
  else
    echo "test.sh: ${need[*]} missing and not root: their tests will fail" >&2
  fi
}

build_tpslab() {
  mkdir -p "$TMPDIR/bin" &&
    go build -o "$TMPDIR/bin/tpslab" ./cmd/tpslab &&
    go build -tags slowverify -o "$TMPDIR/bin/tpslab-slowverify" ./cmd/tpslab
}

step "Debian packages" packages
step "checks (modules, tidy, gofmt)" checks
step "test.sh's own helpers (.ci/steps_test.sh)" .ci/steps_test.sh
step "build tpslab (normal, slowverify)" build_tpslab
export TPSLAB_TEST_BIN=$TMPDIR/bin/tpslab TPSLAB_TEST_BIN_SLOWVERIFY=$TMPDIR/bin/tpslab-slowverify

# The external programs build in the background, at low priority, while
# the packages that do not need them run; a test that needs one waits on
# the cache's lock for it. The chains' vet runs after their build, which
# compiled what it checks.
background cache-build sh -c 'nice -n 10 "$TPSLAB_TEST_BIN" cache build &&
  (cd chains/cosmos && nice -n 10 go vet ./...) &&
  (cd chains/cosmosevm && nice -n 10 go vet ./...)'

step "vet" go vet ./...

# Packages that start external programs run last, so their builds have the
# most time; the Kubernetes test is a step of its own after everything.
late="internal/kinds/factom internal/kinds/taler internal/targets/taler internal/testnet/sdknet internal/targets/cosmos internal/targets/evm internal/cli"
pkgs=()
for p in $(go list ./...); do
  rel=${p#github.com/tpslab/tpslab/}
  case " $late " in *" $rel "*) continue ;; esac
  [ -n "$(ls "$rel"/*_test.go 2>/dev/null)" ] && pkgs+=("$rel")
done
for rel in $late; do pkgs+=("$rel"); done

# The longest packages run one after another beside all the others: most
# tests wait on blocks and answers rather than the CPU (internal/targets/httpapi
# used 93 s of CPU in 136 s of its 2 cores' 272), and each checks counts,
# never times. The runner's tests, the EVM chains' (geth, tpsevmd, evmd)
# and the command line's: the two lanes end about together.
beside="internal/runner internal/targets/evm internal/cli"
beside_pid=""
beside_t0=$SECONDS
echo "=== $beside (beside the packages below; their output follows them)"
(
  for rel in $beside; do
    t0=$SECONDS
    go test -count=1 -timeout 30m -skip '^TestLoadAndNetworkOnKubernetes$' "./$rel" "$@" >"$TMPDIR/beside.${rel//\//_}.log" 2>&1
    echo "$? $t0 $SECONDS" >"$TMPDIR/beside.${rel//\//_}.rc"
  done
) &
beside_pid=$!
for rel in "${pkgs[@]}"; do
  case " $beside " in *" $rel "*) continue ;; esac
  step "$rel" go test -count=1 -timeout 30m -skip '^TestLoadAndNetworkOnKubernetes$' "./$rel" "$@"
done
wait "$beside_pid"
beside_pid=""
for rel in $beside; do
  echo "=== $rel (ran beside the packages above)"
  cat "$TMPDIR/beside.${rel//\//_}.log"
  read -r rc t0 t1 <"$TMPDIR/beside.${rel//\//_}.rc" 2>/dev/null || { rc=1; t0=$beside_t0; t1=$SECONDS; }
  if [ "$rc" = 0 ]; then
    rows+=("$(printf '%-44s %6ss  ok (beside the others)' "$rel" $((t1 - t0)))")
  else
    rows+=("$(printf '%-44s %6ss  FAIL (beside the others)' "$rel" $((t1 - t0)))")
    failed+=("$rel")
    failed_logs+=("$TMPDIR/beside.${rel//\//_}.log")
  fi
done

wait_cache() {
  wait_background cache-build "$bg_pid" && bg_pid=""
}
step "README lines: quick tour and what else (.ci/readme-tour)" .ci/readme-tour
step "cache build (background) and chains' vet" wait_cache
step "kubernetes (internal/cli TestLoadAndNetworkOnKubernetes)" go test -count=1 -timeout 40m -run '^TestLoadAndNetworkOnKubernetes$' ./internal/cli "$@"

table
tails
[ ${#failed[@]} -eq 0 ] || { echo "FAILED: ${failed[*]}"; exit 1; }
