#!/usr/bin/env bash
# Hostile inputs on the model surfaces (issue 36): checkpoints whose config.json contradicts the
# weights or changes between versions, family files with huge numbers, backtracking patterns,
# unknown groups and members out of order, index files with a NUL in a name, serve directories of
# another layout or that cannot be written, unquoted globs, EP on a dense model, a checkpoint still
# being written under --watch, and the Python binding after close(). Each case prints its outcome:
# a clear error naming what is wrong (no crash, no hang, nothing committed or published past the
# last good version), or the behaviour a user expects.
# Usage: hostile_models.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/checks.sh"  # $here, $root, $py, the MPI settings, $work, the checks

# A refit job (2 trainers, 1 relay, TP-2 rollouts): "${refit[@]}" --checkpoints 'DIR/step-*' ...
refit=(mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 --timeout 20 --compare-bcast false)
# Copies the generated checkpoints into DIR and applies a Python edit to each config.json
# (`c` is the config of version `v`).
variant() {
  local dir=$1 edit=$2
  cp -r "$work/good" "$dir"
  for v in "$dir"/step-*; do
    "$py" - "$v/config.json" "${v##*-}" "$edit" <<'PY'
import json, sys
path, v, edit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = json.load(open(path))
exec(edit)
json.dump(c, open(path, "w"))
PY
  done
}
family() {  # NAME EDIT: configs/models/llama.json with a Python edit of `f`, as $work/NAME.json
  "$py" - "$root/configs/models/llama.json" "$work/$1.json" "$2" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(f, open(sys.argv[2], "w"))
PY
}
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/good" --versions 2 --seed 5 >/dev/null

echo "config.json against the weights and between versions:"
variant "$work/tied" 'c["tie_word_embeddings"] = True'
refused tied-with-lm_head "holds 'lm_head.weight', which a tied model does not have" 60 "${refit[@]}" --checkpoints "$work/tied/step-*" --serve-dir "$work/tied/serve"
[ -e "$work/tied/serve/replica-0/version" ] && report "it published" tied-published "" || report "" tied-published "nothing published"
refused tied-export "tie_word_embeddings: true" 20 "$dcr" export "$work/tied/step-0000" "$work/tied-export" --rollout-tp 2
variant "$work/geometry" 'if v == 1: c.update(num_attention_heads=8, num_key_value_heads=4, head_dim=8)'
refused heads-change-at-v1 "changes config.json from" 60 "${refit[@]}" --checkpoints "$work/geometry/step-*" --state-dir "$work/geometry/state"
"$dcr" state "$work/geometry/state" 2>&1 | grep -q "on committed version 0" && report "" heads-change-committed "v0 committed, v1 not" ||
  report "v0 not the committed version" heads-change-committed ""
for edit in 'c["vocab_size"] = 101' 'c["hidden_size"] = 96' 'c["intermediate_size"] = 64' 'c["num_hidden_layers"] = 3' \
  'c["num_attention_heads"] = 8.5' 'c["num_attention_heads"] = 1e300' 'c["num_key_value_heads"] = 0'; do
  rm -rf "$work/contradicts"
  variant "$work/contradicts" "$edit"
  word=${edit#*\"}; word=${word%%\"*}
  refused "config ${edit#c}" "$word" 20 "$dcr" export "$work/contradicts/step-0000" "$work/contradicts/export" --rollout-tp 2
done
refused "config num_key_value_heads 0 (named as given)" "\"num_key_value_heads\" must be in [1, 1048576], got 0" 20 \
  "$dcr" export "$work/contradicts/step-0000" "$work/contradicts/export"

echo "model-family files:"
family huge_padding 'f["vocab_padding"] = 1099511627776'
refused vocab_padding-2^40 "\"vocab_padding\" must be in [1, 65536]" 20 \
  "$dcr" export "$work/good/step-0000" "$work/o" --model-family "$work/huge_padding.json"
refused vocab_padding-2^40-refit "\"vocab_padding\" must be in [1, 65536]" 60 "${refit[@]}" --checkpoints "$work/good/step-*" --model-family "$work/huge_padding.json"
# A pattern that backtracks catastrophically under a backtracking matcher, first in the file: RE2
# matches in linear time, it matches nothing, and the job runs.
family backtracking 'f["rules"].insert(0, {"pattern": "(m|o|d)*(.*)*(.*)*x", "kind": "replicated"})'
accepted backtracking-pattern 60 "${refit[@]}" --checkpoints "$work/good/step-*" --model-family "$work/backtracking.json"
family backreference 'f["rules"][0]["pattern"] = "(m)\\1odel.*"'
refused backreference "no backreferences or lookaround" 20 "$dcr" export "$work/good/step-0000" "$work/o" \
  --model-family "$work/backreference.json"
family group9 'f["rules"][2]["serve"] = "model.layers.$9.qkv_proj"'
refused unknown-group-\$9 "uses \$9, but the pattern has 3 group(s)" 20 "$dcr" export "$work/good/step-0000" "$work/o" \
  --model-family "$work/group9.json"
family kqv 'f["rules"][2]["members"] = ["k", "q", "v"]'
refused qkv-members-out-of-order "lists its members query first" 20 "$dcr" export "$work/good/step-0000" "$work/o" \
  --model-family "$work/kqv.json"

echo "checkpoint files:"
"$py" "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/sharded" --versions 1 --shards 2 >/dev/null
"$py" - "$work/sharded/step-0000/model.safetensors.index.json" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
name = "model.norm.weight"
index["weight_map"][name] = index["weight_map"][name] + "\u0000.evil"
json.dump(index, open(sys.argv[1], "w"))
PY
refused nul-in-shard-name 'names shard' 20 "$dcr" export "$work/sharded/step-0000" "$work/o"
grep -qF '\x00.evil' "$work/out" && report "" nul-shown "the NUL is shown as \\x00" || report "the NUL cut the name" nul-shown ""

echo "serve directories and the command line:"
"$dcr" export "$work/good/step-0000" "$work/stale/replica-0" --rollout-tp 4 >/dev/null
refused serve-dir-of-tp4 "is the shard of tp rank 3, but this job's replicas have tp 2" 60 \
  "${refit[@]}" --checkpoints "$work/good/step-*" --serve-dir "$work/stale"
touch "$work/a_file"
refused serve-dir-unwritable "--serve-dir" 60 "${refit[@]}" --checkpoints "$work/good/step-*" --serve-dir "$work/a_file/serve"
refused unquoted-glob "a glob the shell expanded? Quote it" 20 "$dcr" refit --checkpoints "$work/good/step-0000" \
  "$work/good/step-0001"
timeout 60 "${refit[@]}" --checkpoints "$work/good/step-*" --rollout-ep 2 >"$work/out" 2>&1
grep -q "change nothing: the model has no expert tensors" "$work/out" && grep -q "rollouts (tp 2, ep 2" "$work/out" &&
  report "" ep-on-a-dense-model "refit runs, says so: $(grep -o 'note: .*' "$work/out" | cut -c1-90)" ||
  report "no note about EP on a dense model" ep-on-a-dense-model ""

echo "--watch and a checkpoint still being written:"
mkdir -p "$work/watch"
timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 --watch "$work/watch" \
  --watch-timeout 60 --timeout 20 --compare-bcast false >"$work/out" 2>&1 &
pid=$!
cp -r "$work/good/step-0000" "$work/watch/"
mkdir "$work/watch/step-0001" && cp "$work/good/step-0001/config.json" "$work/watch/step-0001/"
head -c 3000 "$work/good/step-0001/model.safetensors" >"$work/watch/step-0001/model.safetensors"  # half written
sleep 4
cp "$work/good/step-0001/model.safetensors" "$work/watch/step-0001/model.safetensors"
sleep 1 && touch "$work/watch/STOP"
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] && grep -q "v1 .*verified" "$work/out" && grep -q "to be complete" "$work/out" &&
  report "" watch-half-written "waited for it, then refitted v1 verified" || report "exit $rc" watch-half-written ""

echo "the Python binding:"
if [ -f "$(dirname "$dcr")/libdcr.so" ]; then
  DCR_LIBRARY="$(dirname "$dcr")/libdcr.so" timeout 60 "$py" "$root/tests/api/test_binding.py" \
    Binding.test_read_only_arrays_are_refused_and_every_call_after_close_raises >"$work/out" 2>&1 &&
    report "" python-read-only-and-closed "a read-only array and every call after close() raise DcrError" ||
    report "failed" python-read-only-and-closed ""
else
  echo "  skip python-read-only-and-closed: no libdcr.so beside $dcr (the sanitizer build makes the program only)"
fi

finish
