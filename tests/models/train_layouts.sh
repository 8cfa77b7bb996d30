#!/usr/bin/env bash
# Training layouts as large jobs run them (README: training layouts), refit under mpirun from HF
# checkpoint sequences (scripts/make_hf_checkpoint.py, 3% of elements changed per version):
# pipeline stages (--train-pp), data-parallel replicas (--train-dp) with TP, FSDP and EP. Each case
# runs its layout at rollout TP 1 and TP 2 and checks, from the job's --json records:
# - every version committed and verified (every rollout equals the checkpoint byte for byte);
# - replicas add no bytes: each delta's wire bytes within 1% of the same layout with one replica;
# - the work is spread: the busiest trainer scanned at most 1.2x the trainers' mean (printed; not
#   asserted for the uneven pipeline split, whose stages differ by design).
# A clean --check-replicas run commits every version (no false alarm). The refusal of replicas that
# differ, and every element carried by exactly one frame, are checked from the frames themselves
# in tests/refit/test_training_layouts.cc.
# Usage: train_layouts.sh DCR_BINARY [CASE...]
set -uo pipefail
dcr=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
source "$root/scripts/mpi_env.sh"
# 4 layers of hidden 256: about 3 M parameters, cut into frames of 16 K elements so that every
# replica has tens of frames to share.
geometry="--hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --intermediate 512 --layers 4 --vocab 1000"
# name | generator options | layout | the same layout with one replica
all_cases=(
  "tp2-pp2-dp2|--family llama $geometry|--trainers 8 --train-tp 2 --train-pp 2 --train-dp 2|--trainers 4 --train-tp 2 --train-pp 2"
  "tp2-pp2-dp2-tied|--family llama --tie $geometry|--trainers 8 --train-tp 2 --train-pp 2 --train-dp 2|--trainers 4 --train-tp 2 --train-pp 2"
  "pp2-dp2-fsdp2|--family llama $geometry|--trainers 8 --train-pp 2 --train-dp 2|--trainers 4 --train-pp 2"
  "pp-uneven-dp2|--family llama $geometry|--trainers 4 --train-pp 2 --train-pp-layers 3,1 --train-dp 2|--trainers 2 --train-pp 2 --train-pp-layers 3,1"
  "moe-ep2-dp2|--family mixtral --experts 4 $geometry|--trainers 4 --train-ep 2 --train-dp 2|--trainers 2 --train-ep 2"
  "dp2|--family llama $geometry|--trainers 2 --train-dp 2|--trainers 1"
  "dp4|--family llama $geometry|--trainers 4 --train-dp 4|--trainers 1"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/cases.sh"

refit() {  # json log layout... (rollout options among them)
  local json=$1 log=$2
  shift 2
  local trainers tp
  trainers=$(sed -n 's/.*--trainers \([0-9]*\).*/\1/p' <<<"$*")
  tp=$(sed -n 's/.*--rollout-tp \([0-9]*\).*/\1/p' <<<"$*")
  timeout 300 mpirun --oversubscribe -np $((trainers + 1 + tp)) "$dcr" refit "$@" --relays 1 \
    --frame-elements 16384 --bundle-below 4096 --contexts false --compare-bcast false --compare-full false \
    --timeout 60 --json "$json" >"$log" 2>&1
}

# Checks the records of a layout ($1) against its one-replica run ($2), and its balance unless $3
# is "uneven"; prints what it found.
check_records() {
  "$py" - "$1" "$2" "$3" <<'PY'
import json, sys
even = sys.argv[3] != "uneven"
steps = json.load(open(sys.argv[1]))["steps"]
one = {s["version"]: s for s in json.load(open(sys.argv[2]))["steps"]}
for s in steps:
    assert s["committed"] and s["bitexact"] is True, f"v{s['version']} not committed and verified"
    if s["kind"] == "delta":
        ratio = s["wire_bytes"] / one[s["version"]]["wire_bytes"]
        assert abs(ratio - 1) <= 0.01, f"v{s['version']}: wire bytes {ratio:.4f}x the one-replica refit's"
    assert s["scanned"]["balance"] <= 1.2 or not even, f"v{s['version']}: busiest trainer {s['scanned']['balance']:.3f}x the mean"
deltas = [s for s in steps if s["kind"] == "delta"]
print(f"{len(steps)} versions verified, delta wire bytes {sum(s['wire_bytes'] for s in deltas)} "
      f"({sum(s['wire_bytes'] for s in deltas) / sum(one[s['version']]['wire_bytes'] for s in deltas):.4f}x one replica's), "
      f"busiest trainer scanned {max(s['scanned']['balance'] for s in steps):.3f}x the mean")
PY
}

run_case() {
  local name=$1 gen=$2 layout=$3 single=$4
  local dir="$work/$name" tp
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  "$py" "$root/scripts/make_hf_checkpoint.py" $gen --out "$dir/ck" --versions 3 --seed 5 >/dev/null ||
    { echo "  $name: cannot make checkpoints"; return 1; }
  local rollout="--rollout-tp"
  [[ $name == moe-* ]] && rollout="--rollout-ep 2 --rollout-tp"
  for tp in 1 2; do
    [[ $name == moe-* && $tp == 1 ]] && rollout="--rollout-tp"
    [[ $name == moe-* && $tp == 2 ]] && rollout="--rollout-ep 2 --rollout-tp"
    # shellcheck disable=SC2086
    refit "$dir/one-$tp.json" "$dir/one-$tp.log" --checkpoints "$dir/ck/step-*" $single $rollout $tp ||
      { echo "  $name: the one-replica refit at rollout TP $tp failed"; tail -20 "$dir/one-$tp.log"; return 1; }
    # shellcheck disable=SC2086
    refit "$dir/dp-$tp.json" "$dir/dp-$tp.log" --checkpoints "$dir/ck/step-*" $layout $rollout $tp ||
      { echo "  $name: the refit at rollout TP $tp failed"; tail -20 "$dir/dp-$tp.log"; return 1; }
    local said
    said=$(check_records "$dir/dp-$tp.json" "$dir/one-$tp.json" "$([[ $name == *uneven* ]] && echo uneven)") || { echo "  $name rollout TP $tp: $said"; return 1; }
    echo "  $name, rollout TP $tp: $said"
  done
}

run_cases "$@"

# --check-replicas on replicas that agree: every version commits, and the records say the same.
dir="$work/check"
mkdir -p "$dir"
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama $geometry --out "$dir/ck" --versions 2 --seed 9 >/dev/null
if refit "$dir/r.json" "$dir/r.log" --checkpoints "$dir/ck/step-*" --trainers 4 --train-pp 2 --train-dp 2 \
  --check-replicas --rollout-tp 2 && grep -q "v1 *delta.*verified" "$dir/r.log"; then
  echo "  check-replicas: replicas that agree commit every version"
  passed=$((passed + 1))
else
  echo "FAIL check-replicas"; tail -20 "$dir/r.log"; failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
