#!/usr/bin/env bash
# Damaged journals never send a job back to an older version. For each case a job commits v2, one bit
# of the last record of some journals is flipped, and the same job asked for v3 must resume at v2
# (the highest version any intact journal proves committed), finish v3 verified, and leave every
# rank's journal on v3. Usage: damaged_journals.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
flip_last_record() {  # journal: flip one bit in the last 40-byte record's payload
  local size
  size=$(stat -c %s "$1")
  printf '\x01' | dd of="$1" bs=1 seek=$((size - 20)) conv=notrunc status=none  # overwrite one byte
}
run() {  # state steps
  timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 \
    --steps "$2" --transport mpi --compare-full false --compare-bcast false --timeout 30 \
    --state-dir "$1" --spool-dir "$1/spool"
}
for case in "0" "3" "0 1 4" "0 1 2 3"; do
  state="$work/ranks-${case// /-}"
  why=""
  run "$state" 2 >"$state.run1.log" 2>&1 || why="first run failed"
  for r in $case; do [ -n "$why" ] || flip_last_record "$state/rank-$r.journal"; done
  [ -n "$why" ] || run "$state" 3 >"$state.run2.log" 2>&1 || why="second run failed"
  [ -n "$why" ] || grep -q "resumed at committed version 2" "$state.run2.log" || why="did not resume at v2"
  [ -n "$why" ] || ! grep -q "^v0 " "$state.run2.log" || why="restarted from v0"
  [ -n "$why" ] || "$dcr" state "$state" 2>&1 | grep -q "on committed version 3" || why="ranks not all on v3"
  if [ -z "$why" ]; then
    passed=$((passed + 1)); echo "  journals of ranks [$case] damaged: resumed at v2, all ranks on v3"
  else
    failed=$((failed + 1)); echo "FAIL ranks [$case]: $why"; tail -n 15 "$state.run1.log" "$state.run2.log" 2>/dev/null
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
