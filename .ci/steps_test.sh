#!/usr/bin/env bash
# Tests .ci/steps.sh: a background command that outlasts the steps before
# it is waited for from inside a step (a pipeline's subshell), and its exit
# code decides the step; a failing one is named with its code.
set -uo pipefail
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/steps-test.XXXXXX")
trap 'rm -rf "$TMPDIR"' EXIT
rows=()
failed=()
failed_logs=()
. "$(dirname "$0")/steps.sh"
problems=0
fail() { echo "steps_test: $*"; problems=$((problems + 1)); }

background slow-ok sh -c 'sleep 2; echo built'
ok_pid=$bg_pid
background slow-bad sh -c 'sleep 3; echo broke; exit 7'
bad_pid=$bg_pid
step "a quick step" true
step "wait for slow-ok" wait_background slow-ok "$ok_pid" >/dev/null
step "wait for slow-bad" wait_background slow-bad "$bad_pid" >/dev/null

[ ${#rows[@]} = 3 ] || fail "3 rows expected, got ${#rows[@]}: ${rows[*]}"
[[ ${rows[1]} == *" ok" ]] || fail "the slow command that succeeded: ${rows[1]}"
[[ ${rows[2]} == *" FAIL" ]] || fail "the slow command that exited 7 did not fail its step: ${rows[2]}"
[ "${failed[*]}" = "wait for slow-bad" ] || fail "failed: ${failed[*]}"
grep -q '^built$' "$TMPDIR/step.1.log" || fail "the first command's output is not in its step's log"
grep -q '^slow-bad: exit 7 after [0-9]*s' "$TMPDIR/step.2.log" || fail "the failure is not named with its exit code: $(cat "$TMPDIR/step.2.log")"
# Waited, not skipped: the step lasted until the command ended.
secs=$(sed -E 's/^.* ([0-9]+)s +FAIL$/\1/' <<<"${rows[2]}")
[ -s "$TMPDIR/bg.slow-bad.rc" ] || fail "the step ended before the background command wrote its exit code"
[ $problems = 0 ] && echo "steps_test: ok (the slow step waited ${secs}s)"
[ $problems = 0 ]
