#!/usr/bin/env bash
# The fault matrix: for each case, run the refit with a rank killed (kill -9) in one phase, then run
# the SAME command again. The second run must resume and finish with every version committed and
# verified byte for byte (dcr refit exits non-zero otherwise), and `dcr state` must find every rank
# on the same committed version. A case of several points (comma separated) kills several ranks:
# at once when they name the same version, or one more while the job resumes (phase resume), and
# the command is run once more per extra kill. Prints the matrix and its pass count; exits non-zero
# on any failure.
# Usage: [TRANSPORT=ucx|mpi] fault_matrix.sh DCR_BINARY [CASE...]   (CASE = ROLE:INDEX:PHASE:VERSION[,...])
set -uo pipefail
dcr=$1
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(
  trainer:0:encode:2 trainer:1:stream:2 trainer:0:commit:3
  relay:0:stream:2 relay:0:commit:2
  rollout:0:apply:2 rollout:1:commit:2 rollout:1:apply:0 rollout:0:commit:4
  trainer:1:stream:2,rollout:0:apply:2 rollout:0:apply:2,relay:0:resume:1 relay:0:resume:1,trainer:0:commit:2)
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
results=()
for case in "${cases[@]}"; do
  state="$work/${case//:/-}"
  cmd=(mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 --steps 4
       --transport "${TRANSPORT:-mpi}" --compare-full false --compare-bcast false --timeout 30 --snapshot-every 2
       --state-dir "$state" --spool-dir "$state/spool" --fail-at "$case")
  verdict="FAIL"
  points=$(echo "$case" | tr ',' '\n' | wc -l)
  runs=0
  until [ "$runs" -gt "$points" ]; do  # each run dies at one point or more, or finishes
    runs=$((runs + 1))
    timeout 120 "${cmd[@]}" >"$state.run$runs.log" 2>&1 && break
  done
  kills=$(cat "$state".run*.log | grep -c "injected kill -9")
  if [ "$runs" -eq 1 ]; then
    why="first run did not die"
  elif [ "$kills" -ne "$points" ]; then
    why="$kills of $points injected kills fired"
  elif ! grep -q "^v4 .*verified" "$state.run$runs.log"; then
    why="run $runs did not finish"
  elif ! "$dcr" state "$state" >"$state.state.log" 2>&1 || ! grep -q "on committed version 4" "$state.state.log"; then
    why="ranks not all on version 4"
  else
    verdict="pass"
    why=$(grep -o "resumed at committed version [0-9]*" "$state.run$runs.log" || echo "fresh start (nothing was committed)")
    grep -q "caught up" "$state.run$runs.log" && why="$why, a rollout caught up from the spool"
    [ "$runs" -gt 2 ] && why="$why (after $((runs - 1)) killed runs)"
    passed=$((passed + 1))
  fi
  results+=("$(printf '%-24s %-5s %s' "$case" "$verdict" "$why")")
  if [ "$verdict" = FAIL ]; then
    echo "---- $case: $why"; tail -n 20 "$state".run*.log "$state.state.log" 2>/dev/null
  fi
done
echo "fault matrix (kill -9 at ROLE:INDEX:PHASE:VERSION, then the same command again):"
printf '%s\n' "${results[@]}"
echo "$passed passed, $(( ${#cases[@]} - passed )) failed"
[ "$passed" -eq ${#cases[@]} ]
