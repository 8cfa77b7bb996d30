#!/usr/bin/env bash
# A rank stopped with SIGSTOP in the middle of a job (not dead: its connections stay open) is
# reported within --timeout, and no rank waits unboundedly: the job ends within 2 x --timeout + 30 s
# plus start-up: a stopped relay on UCX, a stopped rollout on MPI, the two jobs at once (each
# waits out its timeouts; they are told apart by --seed).
# Usage: stopped_rank.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'pkill -KILL -f "refit --model tiny --steps 100000" 2>/dev/null; rm -rf "$work"' EXIT
timeout_s=5
rank_pid() {  # the pid of world rank $1 of the running job with --seed $2
  for p in $(pgrep -f "refit --model tiny --steps 100000 --seed $2 "); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
stop_one() {  # TRANSPORT RANK SEED: prints one "ok" or "FAIL" line
  local transport=$1 rank=$2 seed=$3 log job pid name fail_why start limit took
  {
    log="$work/$transport-$rank.log"
    mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --steps 100000 --seed "$seed" --trainers 2 --relays 1 \
      --rollout-tp 2 --transport "$transport" --timeout "$timeout_s" --compare-full false --compare-bcast false >"$log" 2>&1 &
    job=$!
    sleep 6
    pid=$(rank_pid "$rank" "$seed")
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
    else
      echo "  FAIL  $name: $fail_why"; tail -5 "$log"
    fi
  }
}
stop_one ucx 2 11 >"$work/ucx.out" &  # relay 0 on UCX
stop_one mpi 4 12 >"$work/mpi.out" &  # rollout 1 on MPI
wait
cat "$work/ucx.out" "$work/mpi.out"
passed=$(cat "$work/ucx.out" "$work/mpi.out" | grep -c "^  ok ")
failed=$((2 - passed))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
