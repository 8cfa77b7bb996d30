#!/usr/bin/env bash
# Bad real-model input refused with a clear error naming the file and the tensor, and nothing
# committed past the last good version: a tensor no rule matches at TP > 1, a malformed config.json,
# a missing shard file, an index that places a tensor in a shard that does not hold it, a
# checkpoint whose shapes changed, and with block-FP8 serving a TP split that cuts 128 x 128 blocks
# and a NaN in a quantized weight. Usage: refit_errors.sh DCR_BINARY
set -uo pipefail
dcr=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
source "$root/scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/good" --versions 2 --shards 2 >/dev/null
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/wide" --versions 1 --hidden 96 >/dev/null
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/blocks" --versions 2 --hidden 256 --heads 2 \
  --kv-heads 2 --head-dim 128 --intermediate 256 >/dev/null

# case NAME COMMITTED(-1: none) WORD... : the refit of $work/NAME/step-* must fail, print every WORD,
# and leave the job (and the published serving shards) at version COMMITTED.
check() {
  local name=$1 committed=$2
  shift 2
  local dir="$work/$name" why=""
  timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 \
    --checkpoints "$dir/step-*" --state-dir "$dir/state" --serve-dir "$dir/serve" --timeout 30 \
    "${extra[@]}" >"$dir.log" 2>&1 && why="the refit succeeded"
  for word in "$@"; do
    [ -n "$why" ] || grep -qF -- "$word" "$dir.log" || why="no '$word' in its output"
  done
  if [ -z "$why" ] && [ "$committed" -ge 0 ]; then
    "$dcr" state "$dir/state" 2>&1 | grep -q "on committed version $committed" || why="not left at version $committed"
    grep -q "^version $committed\$" "$dir/serve/replica-0/version" || why="published shards not at version $committed"
  fi
  if [ -z "$why" ] && [ "$committed" -lt 0 ] && [ -e "$dir/serve" ]; then why="serving shards were published"; fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    echo "  $name: refused: $(grep -o 'dcr refit: .*' "$dir.log" | grep -v 'trainers (fsdp' | tail -1 | cut -c1-240)"
  else
    failed=$((failed + 1))
    echo "FAIL $name: $why"
    tail -n 15 "$dir.log"
  fi
}
setup() { mkdir -p "$work/$1"; cp -r "$work/good/step-0000" "$work/good/step-0001" "$work/$1/"; }

# A family without the o_proj rule: o_proj weights match nothing, refused at TP 2.
setup unmatched
"$py" - "$root/configs/models/llama.json" "$work/no_o_proj.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
f["rules"] = [r for r in f["rules"] if "o_proj\\.weight" not in r["pattern"]]
json.dump(f, open(sys.argv[2], "w"))
PY
extra=(--model-family "$work/no_o_proj.json")
check unmatched -1 "model.layers.0.self_attn.o_proj.weight" "no_o_proj.json" "matches no rule"
extra=()

setup bad_config
head -c 40 "$work/good/step-0000/config.json" >"$work/bad_config/step-0000/config.json"
check bad_config -1 "bad_config/step-0000/config.json" "not valid JSON"

setup missing_shard
rm "$work/missing_shard/step-0001/model-00002-of-00002.safetensors"
check missing_shard 0 "model-00002-of-00002.safetensors" "does not exist" "step-0001"

setup bad_index
"$py" - "$work/bad_index/step-0001/model.safetensors.index.json" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
name = "model.norm.weight"
index["weight_map"][name] = next(f for f in set(index["weight_map"].values()) if f != index["weight_map"][name])
json.dump(index, open(sys.argv[1], "w"))
PY
check bad_index 0 "model.norm.weight" "model.safetensors.index.json" "step-0001"

setup reshaped
rm -r "$work/reshaped/step-0001" && cp -r "$work/wide/step-0000" "$work/reshaped/step-0001"
check reshaped 0 "step-0001" "model.embed_tokens.weight' changed shape from [100, 64] to [100, 96]"

# Block FP8: the default model's TP-2 bands (32 query rows) cut its 128 x 128 blocks.
setup fp8_cuts_blocks
extra=(--serve-quant fp8-block)
check fp8_cuts_blocks -1 "--serve-quant" "fp8-block" "model.layers.0.self_attn.q_proj.weight" "cuts its 128 x 128 blocks"

# Block FP8: version 1 holds a NaN in a quantized weight, whose block then has no scale.
mkdir -p "$work/fp8_nan" && cp -r "$work/blocks/step-0000" "$work/blocks/step-0001" "$work/fp8_nan/"
"$py" - "$work/fp8_nan/step-0001/model.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    begin = json.loads(f.read(n))["model.layers.1.mlp.up_proj.weight"]["data_offsets"][0]
    f.seek(8 + n + begin + 2 * (130 * 256 + 7))  # row 130, column 7: the block at row 128, column 0
    f.write(struct.pack("<H", 0x7FC0))
PY
check fp8_nan 0 "model.layers.1.mlp.up_proj.weight" "block at row 128, column 0 holds a non-finite value" "version 1"
extra=()

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
