# The step and background helpers test.sh uses (sourced; .ci/steps_test.sh
# tests them). They write under $TMPDIR and append to the arrays rows,
# failed and failed_logs, which the sourcing script declares.

# step NAME CMD...: runs CMD, records its wall time and whether it failed.
step() {
  local name=$1
  shift
  local t0=$SECONDS log="$TMPDIR/step.${#rows[@]}.log"
  echo "=== $name"
  if "$@" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" = 0 ]; then
    rows+=("$(printf '%-44s %6ss  ok' "$name" $((SECONDS - t0)))")
  else
    rows+=("$(printf '%-44s %6ss  FAIL' "$name" $((SECONDS - t0)))")
    failed+=("$name")
    failed_logs+=("$log")
  fi
}

# background NAME CMD...: starts CMD in a process group of its own (so it
# can be stopped whole), its output in $TMPDIR/bg.NAME.log; when it ends
# it writes its exit code and seconds to $TMPDIR/bg.NAME.rc. Sets bg_pid.
background() {
  local name=$1
  shift
  rm -f "$TMPDIR/bg.$name.rc"
  set -m
  (
    t0=$SECONDS
    "$@"
    echo "$? $((SECONDS - t0))" >"$TMPDIR/bg.$name.rc"
  ) >"$TMPDIR/bg.$name.log" 2>&1 &
  bg_pid=$!
  set +m
}

# wait_background NAME PID: waits for what background NAME started, from
# any shell: a step runs in a pipeline's subshell, whose `wait` knows no
# child of the shell that started it, so it waits for the file the
# command writes when it ends (or for its process to be gone without
# writing it). Prints its output and its exit code; fails with it.
wait_background() {
  local name=$1 pid=$2 rc secs
  while [ ! -s "$TMPDIR/bg.$name.rc" ] && kill -0 "$pid" 2>/dev/null; do sleep 1; done
  cat "$TMPDIR/bg.$name.log"
  read -r rc secs <"$TMPDIR/bg.$name.rc" 2>/dev/null || { rc=1; secs=?; }
  echo "$name: exit $rc after ${secs}s (in the background)"
  [ "$rc" = 0 ]
}
