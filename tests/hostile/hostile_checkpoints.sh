#!/usr/bin/env bash
# Hostile checkpoint series (issue 45): a trainer saving a step again (O_TRUNC, then the same bytes
# in chunks) while the refit reads it, and checkpoint globs and watched directories holding a
# dangling symlink or a symlink loop. Each case prints its outcome. A file changed under the read
# must end the job with an error naming it (never a signal: reads of a file cut short used to die
# of SIGBUS), with the version not committed, and the same command run again must finish every
# version verified. A match that leads nowhere must be refused naming it, not skipped (the versions
# after it would shift by one); a regular file among the matches is skipped.
# Usage: hostile_checkpoints.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/checks.sh"  # $here, $root, $py, the MPI settings, $work, the checks

# A refit job (2 trainers, 1 relay, TP-2 rollouts that verify every byte).
refit=(mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 --timeout 20
  --compare-full false --compare-bcast false)
# Big enough (about 80 MB a version) that a trainer's load takes a while to read; 4 versions.
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/big" --versions 4 --seed 5 --shards 2 \
  --hidden 1024 --intermediate 2816 --layers 2 --heads 8 --kv-heads 4 --head-dim 128 --vocab 8000 >/dev/null
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/small" --versions 3 --seed 5 >/dev/null

# A trainer saving FILE again and again until STOP exists: open(O_TRUNC), then the same bytes in
# 1 MiB chunks with a short sleep after each, then a pause of up to 0.2 s. It stops only between
# saves, so the file is whole once it has gone.
resave() {
  "$py" - "$1" "$2" <<'PY'
import os, random, sys, time
path, stop = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
while not os.path.exists(stop):
    with open(path, "wb") as f:
        for at in range(0, len(data), 1 << 20):
            f.write(data[at:at + (1 << 20)])
            f.flush()
            time.sleep(0.001)
    time.sleep(random.uniform(0, 0.2))
PY
}

echo "a step saved again while it is read (step-0002's second shard, six runs):"
torn=$work/big/step-0002/model-00002-of-00002.safetensors
for run in 1 2 3 4 5 6; do
  state=$work/state-$run
  rm -f "$work/stop"
  resave "$torn" "$work/stop" &
  saver=$!
  timeout 300 "${refit[@]}" --checkpoints "$work/big/step-*" --state-dir "$state" >"$work/out" 2>&1
  rc=$?
  touch "$work/stop" && wait "$saver"
  committed=$("$dcr" state "$state" 2>&1 | grep -o "on committed version [0-9]*")
  why="" outcome=""
  if [ "$rc" -eq 0 ]; then
    [ "$(grep -c "^v[0-3] .*verified" "$work/out")" -eq 4 ] || why="exit 0 but not every version verified"
    outcome="finished, every version verified"
  elif [ "$rc" -ne 1 ]; then
    why="crashed (exit $rc: a signal or a sanitizer)"
  elif grep -qF "'$torn' changed while it was being read" "$work/out"; then
    where="while opening it"
    grep -q "cannot verify" "$work/out" && where="under a rollout's verification"
    grep -q "version 2 is not used" "$work/out" && where="under a trainer's load"
    how="seen in its size or times"
    grep -q "pages vanished" "$work/out" && how="pages vanished under a read"
    outcome="changed while it was being read $where ($how)"
    # A trainer's torn load is never encoded: version 2 is not committed. A rollout that could not
    # verify it did so after the commit.
    want="on committed version 1"
    grep -q "cannot verify" "$work/out" && ! grep -q "version 2 is not used" "$work/out" && want="on committed version 2"
    [ "$committed" = "$want" ] || why="${committed:-no committed version}, expected '$want'"
  elif grep -qF "safetensors file '$torn': " "$work/out"; then
    outcome="opened while half written: its header check refused it"  # the header does not fit the bytes yet
    [ "$committed" = "on committed version 1" ] || why="${committed:-no committed version}, expected version 1"
  else
    why="exit 1 without naming '$torn'"
  fi
  report "$why" "resaved-during-read-$run" "$outcome; $committed"
  timeout 300 "${refit[@]}" --checkpoints "$work/big/step-*" --state-dir "$state" >"$work/out" 2>&1
  rc=$?
  committed=$("$dcr" state "$state" 2>&1 | grep -o "on committed version [0-9]*")
  why=""
  [ "$rc" -eq 0 ] || why="the rerun exited $rc"
  [ -z "$why" ] && [ "$committed" != "on committed version 3" ] && why="the rerun left ${committed:-no committed version}"
  [ -z "$why" ] && grep -E "^v[0-3] " "$work/out" | grep -v "^v[0-3] .*from" | grep -qv verified && why="a version not verified"
  report "$why" "resaved-during-read-$run-rerun" "resumed: $(grep -oE "^v[0-3] " "$work/out" | sort -u | tr -d '\n')verified; $committed"
done

echo "globs and watched directories that lead nowhere:"
series() {  # DIR: DIR/step-0000..2 as symlinks to the small checkpoints
  mkdir -p "$1"
  for v in 0 1 2; do ln -s "$work/small/step-000$v" "$1/step-000$v"; done
}
series "$work/dangling"
rm "$work/dangling/step-0001" && ln -s "$work/moved-away" "$work/dangling/step-0001"
refused dangling-symlink "'$work/dangling/step-0001' is a dangling symlink" 60 \
  "${refit[@]}" --checkpoints "$work/dangling/step-*" --state-dir "$work/dangling-state"
"$dcr" state "$work/dangling-state" 2>&1 | grep -q "on committed version" &&
  report "a version was committed" dangling-nothing-refit "" || report "" dangling-nothing-refit "nothing refit"
series "$work/loop"
rm "$work/loop/step-0001" && ln -s "$work/loop/step-0001" "$work/loop/step-0001"
refused symlink-loop "'$work/loop/step-0001' is a symlink loop" 60 "${refit[@]}" --checkpoints "$work/loop/step-*"
series "$work/with-file"
echo "notes" >"$work/with-file/step-notes.txt"
accepted regular-file-skipped 60 "${refit[@]}" --checkpoints "$work/with-file/step-*"
grep -q "^v2 .*verified" "$work/out" && ! grep -q "^v3 " "$work/out" &&
  report "" regular-file-three-versions "v0..v2 verified, the file skipped" || report "not v0..v2" regular-file-three-versions ""

mkdir -p "$work/watch"
cp -r "$work/small/step-0000" "$work/watch/"
ln -s "$work/moved-away" "$work/watch/step-0001"
touch "$work/watch/STOP"
refused watch-dangling "'$work/watch/step-0001' is a dangling symlink" 60 \
  "${refit[@]}" --watch "$work/watch" --watch-timeout 20
# A dangling symlink that appears after the first version: step-0002 must not become version 1.
mkdir -p "$work/watch2"
timeout 120 "${refit[@]}" --watch "$work/watch2" --watch-timeout 60 --state-dir "$work/watch2-state" >"$work/out" 2>&1 &
job=$!
cp -r "$work/small/step-0000" "$work/watch2/"
for _ in $(seq 150); do grep -q "^v0 .*verified" "$work/out" && break; sleep 0.2; done
ln -s "$work/moved-away" "$work/watch2/step-0001"
cp -r "$work/small/step-0002" "$work/watch2/"
touch "$work/watch2/STOP"
wait "$job"
rc=$?
why=""
[ "$rc" -eq 1 ] || why="exit $rc"
[ -z "$why" ] && ! grep -qF "'$work/watch2/step-0001' is a dangling symlink" "$work/out" && why="step-0001 not named"
[ -z "$why" ] && grep -q "^v1 " "$work/out" && why="a version 1 was refit"
"$dcr" state "$work/watch2-state" 2>&1 | grep -q "on committed version 0" || why="${why:-v0 not the committed version}"
report "$why" watch-dangling-after-v0 "stopped at the dangling step-0001 with v0 committed, step-0002 not refit as v1"

finish
