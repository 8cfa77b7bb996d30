#!/usr/bin/env bash
# One publication for a changing fleet of rollout layouts (dcr refit --role publish --serve-tp LIST).
# Usage: fleet.sh DCR_BINARY file|s3
#   file: a file:// store in a temporary directory.
#   s3:   a real S3 server: radosgw on a single-node Ceph, started here by scripts/s3_server.sh.
# No follower is given a checkpoint: each takes the model, config.json and family from the store.
#   1. A publisher of an HF llama checkpoint sequence promising TP 1, 2 and 4 (--watch: one
#      checkpoint at a time). Followers at TP 1 and TP 4 from the start; a TP 2 follower joins
#      after v1 (the snapshot, then the deltas); the TP 4 follower is killed (kill -9) after v1 and
#      restarted as TP 2 on a fresh state directory. After every version, every follower's
#      --serve-dir files are byte-identical to `dcr export` of that checkpoint at its layout.
#   2. A follower at TP 8, which the publication does not promise: refused at start, naming the
#      promised layouts and --serve-tp.
#   3. A qwen3_moe sequence from its own publisher promising TP 2 with EP 1 and 2: a follower at
#      TP 2 EP 2 serves files identical to `dcr export --rollout-ep 2` after every version.
#   4. With 18 deltas kept, a follower's GETs per version are its frames and new manifests only.
set -uo pipefail
dcr=$1
kind=$2
here=$(cd "$(dirname "$0")" && pwd)
bucket=dcr-fleet
source "$here/harness.sh"  # work, pass/fail, store_url, the S3 server

publish() {  # name watch-dir log [options]
  local name=$1 watch=$2 log=$3; shift 3
  timeout 600 mpirun --oversubscribe -np 2 "$dcr" refit --role publish --store "$(store_url "$name")" --trainers 2 \
    --watch "$watch" --watch-timeout 300 --frame-elements 4096 "$@" >"$log" 2>&1 &
  pids+=($!)
}
# A follower of `name` with serving layout TP `tp` (and EP `ep`): 1 relay + tp rollouts.
follow() {  # name dir tp ep [options]
  local name=$1 dir=$2 tp=$3 ep=$4; shift 4
  mkdir -p "$dir"
  timeout 600 mpirun --oversubscribe -np $((1 + tp)) "$dcr" refit --role follow --store "$(store_url "$name")" \
    --relays 1 --rollout-tp "$tp" --rollout-ep "$ep" --verify false --transport mpi --timeout 60 --poll 0.2 \
    --follow-timeout 300 --state-dir "$dir/state" --serve-dir "$dir/serve" --json "$dir/records.json" "$@" \
    >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  pids+=($!)
}
wait_for_version() {  # dir version
  local pid
  pid=$(cat "$1/pid")
  for _ in $(seq 1800); do
    grep -qs "^version $2\$" "$1/serve/replica-0/version" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# The follower's served files against `dcr export` of checkpoint `ck` at TP tp (EP ep).
same_as_export() {  # dir ck tp ep version
  local dir=$1 ck=$2 tp=$3 ep=$4 v=$5 out="$1/export-$5" r
  "$dcr" export "$ck" "$out" --rollout-tp "$tp" --rollout-ep "$ep" >/dev/null || return 1
  for r in $(seq 0 $((tp - 1))); do
    cmp -s "$out/model-rank-$r-part-0.safetensors" "$dir/serve/replica-0/model-rank-$r-part-0.safetensors" || {
      echo "  $dir v$v: rank $r differs from dcr export"; return 1; }
  done
}
add_checkpoint() {  # made watch step
  cp -r "$1/$3" "$2/.incoming" && mv "$2/.incoming" "$2/$3"
}
# Every follower in $@ (dir:tp:ep) at version v, byte-identical to the export of checkpoint `ck`.
check_all() {  # version ck dir:tp:ep ...
  local v=$1 ck=$2 spec dir tp ep ok=1 said=""
  shift 2
  for spec in "$@"; do
    IFS=: read -r dir tp ep <<<"$spec"
    if wait_for_version "$dir" "$v" && same_as_export "$dir" "$ck" "$tp" "$ep" "$v"; then
      said+=" TP $tp$([ "$ep" = 1 ] || echo " EP $ep")"
    else
      ok=0; echo "  follower $dir (TP $tp EP $ep) at v$v:"; tail -5 "$dir/log"
    fi
  done
  [ $ok = 1 ] && pass "v$v: followers at$said serve files byte-identical to dcr export at their layouts" ||
    fail "v$v: a follower does not serve the export's bytes"
}

# ---- 1: a dense fleet that changes
made=$work/llama
/usr/bin/python3 "$root/scripts/make_hf_checkpoint.py" --family llama --out "$made" --versions 4 --shards 2 \
  --heads 8 --kv-heads 4 >/dev/null || fail "making the llama checkpoints"
mkdir -p "$work/watch"
publish llama "$work/watch" "$work/publish.log" --serve-tp 1,2,4
a=$work/a b=$work/b c=$work/c b2=$work/b2
follow llama "$a" 1 1
follow llama "$b" 4 1
add_checkpoint "$made" "$work/watch" step-0000
check_all 0 "$made/step-0000" "$a:1:1" "$b:4:1"
add_checkpoint "$made" "$work/watch" step-0001
check_all 1 "$made/step-0001" "$a:1:1" "$b:4:1"
follow llama "$c" 2 1  # joins late
check_all 1 "$made/step-0001" "$c:2:1"
kill -9 "$(cat "$b/pid")" 2>/dev/null
pkill -9 -f "state-dir $b/state" 2>/dev/null
sleep 1
follow llama "$b2" 2 1  # the killed TP 4 follower, restarted as TP 2 on a fresh state directory
check_all 1 "$made/step-0001" "$b2:2:1"
add_checkpoint "$made" "$work/watch" step-0002
check_all 2 "$made/step-0002" "$a:1:1" "$c:2:1" "$b2:2:1"
add_checkpoint "$made" "$work/watch" step-0003
check_all 3 "$made/step-0003" "$a:1:1" "$c:2:1" "$b2:2:1"
touch "$work/watch/STOP"
for d in "$a" "$c" "$b2"; do
  wait "$(cat "$d/pid")" || { tail -5 "$d/log"; fail "follower $d did not end cleanly once the publication closed"; }
done
wait "${pids[0]}" || { tail -5 "$work/publish.log"; fail "the llama publisher"; }
kinds=$(/usr/bin/python3 -c 'import json,sys; print(" ".join("%d:%s" % (s["version"], s["kind"]) for s in json.load(open(sys.argv[1]))["steps"]))' "$c/records.json")
[ "$kinds" = "0:full 1:delta 2:delta 3:delta" ] && pass "the late TP 2 follower took snapshot v0, then the deltas: $kinds" ||
  fail "the late follower applied '$kinds'"
ids=$(cat "$a/state/publication" "$c/state/publication" "$b2/state/publication" | sort -u | wc -l)
[ "$ids" = 1 ] && [ "$(grep -c "^v[0-9]" "$work/publish.log")" = 4 ] &&
  pass "one publisher run, one publication id for every follower, 4 versions put once" ||
  fail "followers saw $ids publications, or the publisher put other than 4 versions"

# ---- 2: a layout the publication does not promise
x=$work/x
mkdir -p "$x"
timeout 120 mpirun --oversubscribe -np 9 "$dcr" refit --role follow --store "$(store_url llama)" --relays 1 \
  --rollout-tp 8 --verify false --transport mpi --follow-timeout 10 --state-dir "$x/state" >"$x/log" 2>&1 &&
  fail "a TP 8 follower of a publication promising TP 1, 2, 4 ran"
grep -q "promises the serving layouts TP 1, TP 2, TP 4; this follow job's TP 8 .*--serve-tp" "$x/log" &&
  pass "a TP 8 follower refused at start: $(grep -o "promises the serving layouts TP 1, TP 2, TP 4[^(]*" "$x/log" | head -1)" ||
  { tail -5 "$x/log"; fail "the unpromised layout was not refused by name"; }

# ---- 3: an MoE sequence, an EP 2 follower
moe=$work/moe
/usr/bin/python3 "$root/scripts/make_hf_checkpoint.py" --family qwen3_moe --out "$moe" --versions 3 --shards 2 \
  >/dev/null || fail "making the qwen3_moe checkpoints"
mkdir -p "$work/moe-watch"
publish moe "$work/moe-watch" "$work/publish-moe.log" --serve-tp 2 --serve-ep 1,2
e=$work/e
follow moe "$e" 2 2
for v in 0 1 2; do
  add_checkpoint "$moe" "$work/moe-watch" "step-000$v"
  check_all "$v" "$moe/step-000$v" "$e:2:2"
done
touch "$work/moe-watch/STOP"
wait "$(cat "$e/pid")" || { tail -5 "$e/log"; fail "the EP 2 follower did not end cleanly"; }

# ---- 4: the follower's requests per version with every version kept (18 deltas after the snapshot):
# a follower catching up GETs each version's frames and its new manifests only, not every kept
# manifest again.
timeout 300 mpirun --oversubscribe -np 2 "$dcr" refit --role publish --store "$(store_url keep)" --trainers 2 \
  --model tiny --steps 18 --spool-keep 16 --full-every 100 --serve-tp 2 >"$work/publish-keep.log" 2>&1 ||
  { tail -5 "$work/publish-keep.log"; fail "the publisher of 18 versions"; }
k=$work/k
follow keep "$k" 2 1 --model tiny --steps 18
wait "$(cat "$k/pid")" || { tail -5 "$k/log"; fail "the follower of 18 versions"; }
extra=$(/usr/bin/python3 -c '
import json, sys
steps = [s for s in json.load(open(sys.argv[1]))["steps"] if s["kind"] == "delta"]
print(" ".join(str(s["store"]["gets"] - s["trainer_frames"]) for s in steps))' "$k/records.json")
most=$(tr " " "\n" <<<"$extra" | sort -n | tail -1)
[ -n "$most" ] && [ "$most" -le 4 ] &&
  pass "18 deltas kept: each delta cost its frames' GETs plus at most $most more (GETs beyond the frames: $extra)" ||
  fail "GETs beyond each version's frames: '$extra' (every kept manifest read again?)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
