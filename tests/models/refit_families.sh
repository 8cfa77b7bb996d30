#!/usr/bin/env bash
# Real-model refits checked by an independent implementation. For each case: the project's generator
# writes HF checkpoints (scripts/make_hf_checkpoint.py); `dcr refit --watch` refits them as they
# appear, publishing every rollout's serving shard (--serve-dir) on each commit; after each version
# tests/models/vllm_reference.py (numpy, vLLM's loader rules as written in SERVING_LAYOUT.md, no dcr
# code) computes every rank's shard from the full checkpoint and compares the published files byte
# for byte, and so does `dcr export` of the same checkpoint.
# Usage: refit_families.sh DCR_BINARY [CASE...]   (CASE = name from the list below)
set -uo pipefail
dcr=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
source "$root/scripts/mpi_env.sh"
# name | generator options | refit options (rollout tp/ep, train tp/ep)
all_cases=(
  "llama-gqa-tp4|--family llama --kv-heads 2|--rollout-tp 4 --trainers 2"
  "qwen2-bias|--family qwen2|--rollout-tp 2 --trainers 2 --train-tp 2"
  "qwen3-qknorm|--family qwen3 --shards 3|--rollout-tp 2 --trainers 2"
  "mixtral-ep2xtp2|--family mixtral --experts 4|--rollout-tp 4 --rollout-ep 2 --trainers 2 --train-ep 2"
  "qwen3moe-ep2|--family qwen3_moe --experts 3|--rollout-tp 2 --rollout-ep 2 --trainers 2 --train-ep 2"
  "llama-tied|--family llama --tie --vocab 200|--rollout-tp 2 --trainers 2"
)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || for c in "${all_cases[@]}"; do cases+=("${c%%|*}"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

wait_for_version() {  # file version pid
  for _ in $(seq 600); do
    [ -f "$1" ] && grep -q "^version $2\$" "$1" && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

run_case() {
  local name=$1 gen=$2 refit=$3
  local dir="$work/$name" tp ep
  tp=$(sed -n 's/.*--rollout-tp \([0-9]*\).*/\1/p' <<<"$refit")
  ep=$(sed -n 's/.*--rollout-ep \([0-9]*\).*/\1/p' <<<"$refit")
  ep=${ep:-1}
  mkdir -p "$dir/watch"
  # shellcheck disable=SC2086
  "$py" "$root/scripts/make_hf_checkpoint.py" $gen --out "$dir/made" --versions 3 --seed 7 >/dev/null || return 1
  local np=$(( $(sed -n 's/.*--trainers \([0-9]*\).*/\1/p' <<<"$refit") + 1 + tp ))
  # shellcheck disable=SC2086
  timeout 300 mpirun --oversubscribe -np "$np" "$dcr" refit $refit --relays 1 --watch "$dir/watch" \
    --watch-timeout 120 --serve-dir "$dir/serve" --frame-elements 2048 --compare-bcast false \
    --timeout 60 >"$dir/refit.log" 2>&1 &
  local pid=$!
  for v in 0 1 2; do
    local step
    step=$(printf 'step-%04d' "$v")
    cp -r "$dir/made/$step" "$dir/watch/.incoming" && mv "$dir/watch/.incoming" "$dir/watch/$step"
    if ! wait_for_version "$dir/serve/replica-0/version" "$v" "$pid"; then
      echo "  $name: version $v was never published"; kill "$pid" 2>/dev/null; tail -20 "$dir/refit.log"; return 1
    fi
    "$py" "$here/vllm_reference.py" "$dir/watch/$step" "$dir/serve/replica-0" --tp "$tp" --ep "$ep" \
      >"$dir/check-$v.log" 2>&1 || { echo "  $name v$v: published shards differ"; cat "$dir/check-$v.log"; return 1; }
    "$dcr" export "$dir/watch/$step" "$dir/export-$v" --rollout-tp "$tp" --rollout-ep "$ep" >/dev/null &&
      "$py" "$here/vllm_reference.py" "$dir/watch/$step" "$dir/export-$v" --tp "$tp" --ep "$ep" >/dev/null ||
      { echo "  $name v$v: dcr export differs"; return 1; }
  done
  touch "$dir/watch/STOP"
  wait "$pid" || { echo "  $name: refit failed"; tail -20 "$dir/refit.log"; return 1; }
  grep -q "v2   delta.*verified" "$dir/refit.log" || { echo "  $name: v2 not verified"; return 1; }
  echo "  $name: 3 versions, $tp serving ranks each identical to the reference ($(grep -c identical "$dir/check-2.log") ranks)"
}

for name in "${cases[@]}"; do
  spec=""
  for c in "${all_cases[@]}"; do [ "${c%%|*}" = "$name" ] && spec=$c; done
  [ -n "$spec" ] || { echo "unknown case $name"; exit 2; }
  IFS='|' read -r _ gen refit <<<"$spec"
  if run_case "$name" "$gen" "$refit"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
