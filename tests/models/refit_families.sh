#!/usr/bin/env bash
# Real-model refits checked by an independent implementation. For each case: the project's generator
# writes HF checkpoints (scripts/make_hf_checkpoint.py: random weights with 3% changed per version;
# or scripts/make_training_run.py: a real AdamW training run, step-0000 .. step-0003); `dcr refit
# --watch` refits them as they appear, publishing every rollout's serving shard (--serve-dir) on each
# commit; after each version tests/models/vllm_reference.py (numpy, vLLM's loader rules as written
# in SERVING_LAYOUT.md, no dcr code) computes every rank's shard from the full checkpoint and
# compares the published files byte for byte, and so does `dcr export` of the same checkpoint.
# Block-FP8 cases (--serve-quant fp8-block) are quantized by the reference's own numpy quantizer
# (tests/layout/fp8_block_reference.py), and print what the data exercised: blocks whose scale
# changed (so every byte in them may change) and blocks that saturate (some |x| / scale above 448).
# Usage: refit_families.sh DCR_BINARY [CASE...]   (CASE = name from the list below)
set -uo pipefail
dcr=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
source "$root/scripts/mpi_env.sh"
# name | generator options (train: make_training_run.py's) | refit options (rollout tp/ep, train tp/ep)
# A 1.3 M-parameter Llama on whole 128 x 128 blocks at TP 2 (head_dim 128); at 10% of bf16 values
# changed per step, one block scale of the 80 moves per step (at 3% none in three steps).
fp8_run="train:--hidden 256 --heads 2 --kv-heads 2 --intermediate 512 --layers 2 --warm-steps 10 --rates 10"
all_cases=(
  "llama-gqa-tp4|--family llama --kv-heads 2|--rollout-tp 4 --trainers 2"
  "qwen2-bias|--family qwen2|--rollout-tp 2 --trainers 2 --train-tp 2"
  "qwen3-qknorm|--family qwen3 --shards 3|--rollout-tp 2 --trainers 2"
  "mixtral-ep2xtp2|--family mixtral --experts 4|--rollout-tp 4 --rollout-ep 2 --trainers 2 --train-ep 2"
  "qwen3moe-ep2|--family qwen3_moe --experts 3|--rollout-tp 2 --rollout-ep 2 --trainers 2 --train-ep 2"
  "llama-tied|--family llama --tie --vocab 200|--rollout-tp 2 --trainers 2"
  "llama-fp8-tp1|$fp8_run|--rollout-tp 1 --trainers 2 --serve-quant fp8-block"
  "llama-fp8-tp2|$fp8_run|--rollout-tp 2 --trainers 2 --train-tp 2 --serve-quant fp8-block"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/cases.sh"

wait_for_version() {  # file version pid
  for _ in $(seq 600); do
    [ -f "$1" ] && grep -q "^version $2\$" "$1" && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# The checkpoints of generator options $1 in $2 (a training run is made once and shared by cases).
make_checkpoints() {
  local gen=$1 made=$2
  if [ "${gen#train:}" = "$gen" ]; then
    # shellcheck disable=SC2086
    "$py" "$root/scripts/make_hf_checkpoint.py" $gen --out "$made" --versions 3 --seed 7 >/dev/null
    return
  fi
  local run="$work/run-$(cksum <<<"$gen" | cut -d' ' -f1)"
  if [ ! -d "$run" ]; then
    # shellcheck disable=SC2086
    "$py" "$root/scripts/make_training_run.py" ${gen#train:} --out "$run.tmp" --steps 3 >"$run.log" 2>&1 ||
      { cat "$run.log"; return 1; }
    mv "$run.tmp" "$run"
  fi
  ln -s "$run"/rate-* "$made"
}

run_case() {
  local name=$1 gen=$2 refit=$3
  local dir="$work/$name" tp ep quant
  tp=$(sed -n 's/.*--rollout-tp \([0-9]*\).*/\1/p' <<<"$refit")
  ep=$(sed -n 's/.*--rollout-ep \([0-9]*\).*/\1/p' <<<"$refit")
  quant=$(sed -n 's/.*--serve-quant \([a-z0-9-]*\).*/\1/p' <<<"$refit")
  ep=${ep:-1}
  quant=${quant:-none}
  mkdir -p "$dir/watch"
  make_checkpoints "$gen" "$dir/made" || return 1
  local np=$(( $(sed -n 's/.*--trainers \([0-9]*\).*/\1/p' <<<"$refit") + 1 + tp ))
  # shellcheck disable=SC2086
  timeout 300 mpirun --oversubscribe -np "$np" "$dcr" refit $refit --relays 1 --watch "$dir/watch" \
    --watch-timeout 120 --serve-dir "$dir/serve" --frame-elements 2048 --compare-bcast false \
    --timeout 60 >"$dir/refit.log" 2>&1 &
  local pid=$! v=0 step
  local layout=(--tp "$tp" --ep "$ep" --serve-quant "$quant")
  for step in $(cd "$dir/made/" && ls -d step-*); do
    cp -r "$dir/made/$step" "$dir/watch/.incoming" && mv "$dir/watch/.incoming" "$dir/watch/$step"
    if ! wait_for_version "$dir/serve/replica-0/version" "$v" "$pid"; then
      echo "  $name: version $v was never published"; kill "$pid" 2>/dev/null; tail -20 "$dir/refit.log"; return 1
    fi
    "$py" "$here/vllm_reference.py" "$dir/watch/$step" "$dir/serve/replica-0" "${layout[@]}" \
      >"$dir/check-$v.log" 2>&1 || { echo "  $name v$v: published shards differ"; cat "$dir/check-$v.log"; return 1; }
    "$dcr" export "$dir/watch/$step" "$dir/export-$v" --rollout-tp "$tp" --rollout-ep "$ep" --serve-quant "$quant" \
      >/dev/null && "$py" "$here/vllm_reference.py" "$dir/watch/$step" "$dir/export-$v" "${layout[@]}" >/dev/null ||
      { echo "  $name v$v: dcr export differs"; return 1; }
    v=$((v + 1))
  done
  touch "$dir/watch/STOP"
  wait "$pid" || { echo "  $name: refit failed"; tail -20 "$dir/refit.log"; return 1; }
  local last=$((v - 1))
  grep -q "v$last *delta.*verified" "$dir/refit.log" || { echo "  $name: v$last not verified"; return 1; }
  echo "  $name: $v versions ($quant), $tp serving ranks each identical to the reference" \
    "($(grep -c identical "$dir/check-$last.log") ranks)"
  if [ "$quant" = fp8-block ]; then
    "$py" "$here/vllm_reference.py" fp8-coverage "$dir"/made/step-* | sed "s/^/  $name: /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "  $name: the data did not exercise both kinds of block"; return 1; }
  fi
}

run_cases "$@"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
