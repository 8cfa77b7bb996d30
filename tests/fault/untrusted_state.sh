#!/usr/bin/env bash
# State that proves itself: with --verify false (as in a deployment, which has no expected model), a
# resume from snapshots swapped between rollouts, from the state of a run with another seed, or a
# catch-up over a spool manifest rewritten (and re-hashed) to drop a frame, must notice (the restored boxes' hashes differ from the trainers' rebuilt version), discard them and
# take a full sync. A third run with --verify true then restores the snapshots the second run wrote
# and checks every byte against the model. Usage: untrusted_state.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
run() {  # state steps seed verify [options]
  local state=$1 steps=$2 seed=$3 verify=$4
  shift 4
  timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 \
    --steps "$steps" --seed "$seed" --verify "$verify" --transport mpi --compare-full false --compare-bcast false \
    --timeout 30 --state-dir "$state" "$@"
}
check() {  # name state steps [options]
  local name=$1 state=$2 steps=$3 why=""
  shift 3
  run "$state" "$steps" 1 false "$@" >"$state.run2.log" 2>&1 || why="the resume with --verify false failed"
  [ -n "$why" ] || grep -q "discarding it and taking a full sync" "$state.run2.log" || why="the bad state was trusted"
  [ -n "$why" ] || run "$state" "$steps" 1 true "$@" >"$state.run3.log" 2>&1 || why="the bits it ended with are wrong"
  [ -n "$why" ] || grep -q "resumed at committed version $steps" "$state.run3.log" || why="run 3 did not resume at v$steps"
  if [ -z "$why" ]; then
    passed=$((passed + 1)); echo "  $name: discarded, re-synced, verified at v$steps"
  else
    failed=$((failed + 1)); echo "FAIL $name: $why"; tail -n 12 "$state".run*.log
  fi
}

run "$work/swap" 2 1 true >"$work/swap.run1.log" 2>&1 || { echo "FAIL setup run"; exit 1; }
mv "$work/swap/rollout-0.h5" "$work/swap/tmp.h5"
mv "$work/swap/rollout-1.h5" "$work/swap/rollout-0.h5"
mv "$work/swap/tmp.h5" "$work/swap/rollout-1.h5"
check "snapshots of rollouts 0 and 1 swapped" "$work/swap" 3

run "$work/foreign" 2 2 true >"$work/foreign.run1.log" 2>&1 || { echo "FAIL setup run"; exit 1; }
check "journals and snapshots of a run with another seed" "$work/foreign" 3

# Snapshots at even versions; v3 reaches the rollouts by catch-up (snapshot v2 + the spool's v3),
# whose manifest from trainer 0 is rewritten without its first frame and re-hashed (XXH3-64).
spool=(--snapshot-every 2 --spool-dir "$work/dropped/spool")
run "$work/dropped" 3 1 true "${spool[@]}" >"$work/dropped.run1.log" 2>&1 || { echo "FAIL setup run"; exit 1; }
/usr/bin/python3 - "$work/dropped/spool/v3/w0.MANIFEST" <<'PY' || { echo "FAIL forging the manifest"; exit 1; }
import sys, xxhash
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
frames = [l for l in lines if l.startswith("frame ")]
body = "".join(l for l in lines[:-1] if l != frames[0])
open(path, "w").write(body + "end %d %016x\n" % (len(frames) - 1, xxhash.xxh3_64_intdigest(body.encode())))
PY
check "a catch-up over a re-hashed manifest that drops a frame" "$work/dropped" 4 "${spool[@]}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
