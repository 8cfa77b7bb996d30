#!/usr/bin/env bash
# --apply staged under mpirun, with real kills (kill -9 at --fail-at points):
#  1. a trainer or the relay dies while version 2 stages, a rollout dies while staging, a rollout
#     dies inside the pause (applying) and at the commit: the same command run again resumes and
#     finishes every version verified byte for byte against the model, every rank on version 3,
#     and --serve-dir names version 3 (its files are written from committed versions only);
#  2. sealed, encrypted frames all spilled to the state directory (--stage-mb 0) apply bit-exact
#     on two threads and no spill file outlives its version; FP8 serving staged, bit-exact;
#  3. --stage-mb 0 without a --state-dir: version 1 is refused naming --stage-mb, nothing committed.
# Usage: staged.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../hostile/checks.sh"
job=(mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 --steps 3
     --apply staged --compare-full false --compare-bcast false --timeout 30)
served_version() { sed -n 's/^version //p' "$1/serve/replica-0/version" 2>/dev/null; }

echo "a rank killed while a version stages or inside the pause, then the same command again:"
for point in trainer:1:stream:2 relay:0:stream:2 rollout:0:stage:2 rollout:1:apply:2 rollout:0:commit:2; do
  state="$work/${point//:/-}"
  cmd=("${job[@]}" --state-dir "$state" --serve-dir "$state/serve")
  timeout 120 "${cmd[@]}" --fail-at "$point" >"$work/killed" 2>&1
  killed=$?
  timeout 120 "${cmd[@]}" >"$work/out" 2>&1
  rerun=$?
  why=""
  if [ "$killed" -eq 0 ] || ! grep -q "injected kill -9" "$work/killed"; then why="the run with --fail-at $point did not die there"
  elif [ "$rerun" -ne 0 ]; then why="the rerun failed (exit $rerun)"
  elif ! grep -q "resumed at committed version" "$work/out"; then why="the rerun did not resume"
  elif ! grep -q "^v3 .*verified" "$work/out"; then why="v3 not verified"
  elif ! "$dcr" state "$state" 2>/dev/null | grep -q "on committed version 3"; then why="ranks not all on version 3"
  elif [ "$(served_version "$state")" != 3 ]; then why="--serve-dir names version '$(served_version "$state")'"
  fi
  report "$why" "$point" "$(grep -o "resumed at committed version [0-9]*" "$work/out"), v3 verified, serve-dir v3"
done

echo "sealed frames spilled, FP8 staged:"
"$dcr" keygen "$work/job.key" >/dev/null
state="$work/sealed"
timeout 120 "${job[@]}" --state-dir "$state" --stage-mb 0 --apply-threads 2 --key-file "$work/job.key" --encrypt --rates 5 \
  >"$work/out" 2>&1
rc=$?
why=""
if [ "$rc" -ne 0 ]; then why="exit $rc"
elif [ "$(grep -c "^v[123] .*verified" "$work/out")" -ne 3 ]; then why="not every delta verified"
elif ! grep -q "MB held in memory, [0-9.]*[1-9][0-9.]* MB spilled" "$work/out"; then why="nothing was spilled"
elif ls "$state"/*.stage >/dev/null 2>&1; then why="a spill file outlived its version"
fi
report "$why" "AES-256-GCM frames, --stage-mb 0, --apply-threads 2" "every delta spilled, opened again when read back, verified"
fp8=(mpirun --oversubscribe -np 4 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 1 --steps 3
     --apply staged --serve-quant fp8-block --compare-full false --compare-bcast false --timeout 30)
accepted "FP8 serving (block-quantized, TP 1), staged" 120 "${fp8[@]}"
grep -q "^v3 .*verified" "$work/out" || report "v3 not verified" "FP8 staged" ""

echo "nowhere to spill:"
refused "--stage-mb 0 without --state-dir" "--stage-mb" 120 "${job[@]}" --stage-mb 0
grep -q "^v1 .*NOT COMMITTED" "$work/out" || report "v1 was not reported NOT COMMITTED" "nothing committed" ""
finish
