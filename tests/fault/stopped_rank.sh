#!/usr/bin/env bash
# A rank stopped with SIGSTOP in the middle of a job (not dead: its connections stay open) is
# reported within --timeout, and no rank waits unboundedly: the job ends within 2 x --timeout + 30 s
# plus start-up: a stopped relay on UCX, a stopped rollout on MPI.
# Usage: stopped_rank.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'pkill -KILL -f "refit --model tiny --steps 100000" 2>/dev/null; rm -rf "$work"' EXIT
timeout_s=5
passed=0
failed=0
rank_pid() {  # the pid of world rank $1 of the running job
  for p in $(pgrep -f "refit --model tiny --steps 100000"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
for case in ucx:2 mpi:4; do  # relay 0 on UCX, rollout 1 on MPI
  transport=${case%:*} rank=${case#*:}
  {
    log="$work/$transport-$rank.log"
    mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --steps 100000 --trainers 2 --relays 1 --rollout-tp 2 \
      --transport "$transport" --timeout "$timeout_s" --compare-full false --compare-bcast false >"$log" 2>&1 &
    job=$!
    sleep 4
    pid=$(rank_pid "$rank")
    name="$transport: world rank $rank stopped with SIGSTOP"
    if [ -z "$pid" ]; then
      fail_why="could not find the rank's process"
    else
      kill -STOP "$pid"
      start=$(date +%s)
      limit=$((2 * timeout_s + 30 + 30))
      while kill -0 "$job" 2>/dev/null && [ $(($(date +%s) - start)) -lt "$limit" ]; do sleep 1; done
      took=$(($(date +%s) - start))
      fail_why=""
      kill -0 "$job" 2>/dev/null && fail_why="the job still runs after ${took} s"
      [ -n "$fail_why" ] || grep -q "within $timeout_s s\|did not complete within" "$log" || fail_why="no timeout reported"
      [ -n "$fail_why" ] || grep -q "^v[0-9]* .*verified" "$log" || fail_why="the job had not started refitting"
    fi
    kill -KILL "$pid" "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    if [ -z "$fail_why" ]; then
      echo "  ok    $name: the job ended in ${took} s: $(grep -m1 -o "no message from[^;]*within $timeout_s s\|[^:]*did not complete within [0-9]* s" "$log")"
      passed=$((passed + 1))
    else
      echo "  FAIL  $name: $fail_why"; tail -5 "$log"; failed=$((failed + 1))
    fi
  }
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
