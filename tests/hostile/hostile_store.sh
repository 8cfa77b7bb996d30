#!/usr/bin/env bash
# Hostile stores and careless operators on the two-job path (issue 45): a publisher job and follow
# jobs joined by a file:// store, and by a deliberately misbehaving S3 endpoint on 127.0.0.1
# (tests/hostile/hostile_s3.py: a directory served as S3, with one misbehaviour chosen per case).
# Each case prints its outcome: a clear error naming the object, endpoint or file (no hang, no
# crash), or the right result; never exit 0 with the wrong weights served.
# Usage: hostile_store.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/checks.sh"  # $here, $root, $py, the MPI settings, $work, the checks
server_pid=""
stop_server() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; server_pid=""; }
trap 'stop_server; rm -rf "$work"' EXIT

tiny=(--model tiny --trainers 2 --rollout-tp 2)
# A publisher of 2 trainer ranks: "${publish[@]}" --store URL --steps N [options]
publish=(mpirun --oversubscribe -np 2 "$dcr" refit --role publish "${tiny[@]}" --seed 7)
# A follower of 1 relay and 2 rollouts (TP 2), checking every byte: "${follow[@]}" --store URL $(state DIR) [options]
follow=(mpirun --oversubscribe -np 3 "$dcr" refit --role follow --relays 1 "${tiny[@]}" --seed 7 --steps 6
  --transport mpi --timeout 20 --poll 0.2)
state() {  # DIR [FOLLOW-TIMEOUT]: a follower's state, serving files and records under DIR (no spaces: under $work)
  mkdir -p "$1"
  echo --state-dir "$1" --serve-dir "$1/serve" --json "$1/records.json" --follow-timeout "${2:-5}"
}
committed() {  # records.json -> "v:kind ..." of the versions committed
  "$py" -c 'import json,sys; print(" ".join("%d:%s" % (s["version"], s["kind"]) for s in json.load(open(sys.argv[1]))["steps"] if s["committed"]))' "$1" 2>/dev/null
}
served_version() { sed -n 's/^version //p' "$1/serve/replica-0/version" 2>/dev/null; }

# The hostile S3 endpoint over directory $work/s3 with MISBEHAVIOUR flags; sets the AWS_* settings.
start_server() {
  stop_server
  rm -f "$work/port"
  "$py" "$here/hostile_s3.py" "$work/s3" --port-file "$work/port" "$@" 2>>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  export AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$work/port")" AWS_ACCESS_KEY_ID=hostile AWS_SECRET_ACCESS_KEY=hostile \
    AWS_REGION=us-east-1
}
# A good publication under a key: v0-v3, a snapshot at v0; the base of most cases.
"$dcr" keygen "$work/key" >/dev/null
key=(--key-file "$work/key")
"${publish[@]}" --store "file://$work/good" --steps 3 "${key[@]}" >"$work/good.log" 2>&1 || { tail "$work/good.log"; echo "FAIL: the good publisher"; exit 1; }

echo "S3 responses that are not what S3 answers (items 2, 3, 4, 13):"
mkdir -p "$work/s3/dcrb" && cp -r "$work/good" "$work/s3/dcrb/p"
s3=("${follow[@]}" --store "s3://dcrb/p?timeout_s=3")
start_server --repeat-token
refused repeated-continuation-token "continuation token" 60 "${s3[@]}" $(state "$work/f-token") "${key[@]}"
start_server --trickle '*MANIFEST'
refused trickled-body "timeout_s" 60 "${s3[@]}" $(state "$work/f-trickle") "${key[@]}"
start_server --endless 'v1/*.frame'
refused endless-frame-body "w0-000000.frame" 60 "${s3[@]}" $(state "$work/f-endless") "${key[@]}"
start_server --html-listing
refused html-listing "ListBucketResult" 60 "${s3[@]}" $(state "$work/f-html") "${key[@]}"
start_server --extra-bytes '*'
accepted extra-bytes-after-bodies 120 "${s3[@]}" $(state "$work/f-extra") "${key[@]}"
[ "$(committed "$work/f-extra/records.json")" = "0:full 1:delta 2:delta 3:delta" ] &&
  report "" extra-bytes-committed "every version committed, verified" || report "committed '$(committed "$work/f-extra/records.json")'" extra-bytes-committed ""

echo "a follower only reads (item 11):"
start_server
refused bucket-that-does-not-exist "does not exist" 60 "${follow[@]}" --store "s3://nobucket/p?timeout_s=3" \
  $(state "$work/f-nobucket" 2)
[ ! -e "$work/s3/nobucket" ] && report "" follower-created-nothing "no bucket made by a follower" ||
  report "the follower created bucket 'nobucket'" follower-created-nothing ""
stop_server

echo "the serving files are part of what a resume repairs (item 5):"
cp -r "$work/good" "$work/serve-store"
"${follow[@]}" --store "file://$work/serve-store" $(state "$work/f-serve") "${key[@]}" >"$work/out" 2>&1
cp -r "$work/f-serve/serve" "$work/serve-v3"
"${publish[@]}" --store "file://$work/serve-store" --steps 4 "${key[@]}" >"$work/out" 2>&1
"${follow[@]}" --store "file://$work/serve-store" $(state "$work/f-serve") "${key[@]}" >"$work/out" 2>&1
rm -rf "$work/f-serve/serve" && cp -r "$work/serve-v3" "$work/f-serve/serve"  # died after committing v4, before its files
accepted serve-dir-behind-is-repaired 60 "${follow[@]}" --store "file://$work/serve-store" $(state "$work/f-serve") "${key[@]}"
grep -q "rewriting it" "$work/out" && [ "$(served_version "$work/f-serve")" = 4 ] &&
  ! diff -q "$work/serve-v3/replica-0/model-rank-0-part-0.safetensors" "$work/f-serve/serve/replica-0/model-rank-0-part-0.safetensors" >/dev/null &&
  report "" serve-dir-at-v4 "the rerun rewrote the serving files at v4" || report "serve dir says '$(served_version "$work/f-serve")'" serve-dir-at-v4 ""

echo "a publication has an identity (items 6, 7, 13):"
cp -r "$work/good" "$work/seed8"
refused publisher-of-another-seed "is not what this publisher rebuilds" 60 mpirun --oversubscribe -np 2 "$dcr" refit \
  --role publish "${tiny[@]}" --seed 8 --store "file://$work/seed8" --steps 5 "${key[@]}"
cp -r "$work/good" "$work/two"
"${publish[@]}" --store "file://$work/two" --steps 100000 "${key[@]}" >"$work/first.log" 2>&1 &
first=$!
for _ in $(seq 100); do grep -q "^v4 " "$work/first.log" && break; sleep 0.1; done
refused second-publisher-on-a-prefix "being published by another publisher" 60 "${publish[@]}" --store "file://$work/two" --steps 40 "${key[@]}"
kill "$first" 2>/dev/null; wait "$first" 2>/dev/null
# Replay: another publication with the same base and key (another change schedule), its v1 and
# CLOSED copied into this one's store; the follower must not serve the other run's weights.
"${publish[@]}" --store "file://$work/other" --steps 1 "${key[@]}" --rates 5 >"$work/out" 2>&1
cp -r "$work/good" "$work/replay" && rm -rf "$work/replay/v1" && cp -r "$work/other/v1" "$work/replay/v1"
cp "$work/other/CLOSED" "$work/replay/CLOSED"
refused replayed-version-from-another-publication "belongs to publication" 60 \
  "${follow[@]}" --store "file://$work/replay" $(state "$work/f-replay") "${key[@]}" --verify false
[ "$(committed "$work/f-replay/records.json")" != "0:full 1:delta" ] &&
  report "" replayed-version-not-applied "nothing of the other publication committed" || report "it applied the replayed v1" replayed-version-not-applied ""
cp -r "$work/good" "$work/garbage-closed" && printf 'garbage\n' >"$work/garbage-closed/CLOSED"
refused garbage-CLOSED "CLOSED' is not a close record" 60 "${follow[@]}" --store "file://$work/garbage-closed" $(state "$work/f-garbage") "${key[@]}"

echo "damaged and foreign versions a reader does not need (item 10):"
# Snapshots at v0 and v2 (the publisher keeps the newest, v2, and the deltas v1-v3); v1's manifest
# damaged: a new follower needs only snapshot v2 and v3.
"${publish[@]}" --store "file://$work/damaged" --steps 3 "${key[@]}" --full-every 2 >"$work/out" 2>&1
printf 'x' >>"$work/damaged/v1/w0.MANIFEST"
accepted damaged-old-delta-new-follower 60 "${follow[@]}" --store "file://$work/damaged" $(state "$work/f-damaged") "${key[@]}"
grep -q "skipping a damaged version.*v1/w0.MANIFEST" "$work/out" &&
  [ "$(committed "$work/f-damaged/records.json")" = "2:full 3:delta" ] &&
  report "" damaged-delta-skipped-and-named "named in a warning; the follower took snapshot v2 and v3" ||
  report "committed '$(committed "$work/f-damaged/records.json")'" damaged-delta-skipped-and-named ""
accepted damaged-old-delta-publisher-restart 60 "${publish[@]}" --store "file://$work/damaged" --steps 4 "${key[@]}" --full-every 2

echo "a store that went backwards (item 12):"
cp -r "$work/good" "$work/back"
"${follow[@]}" --store "file://$work/back" $(state "$work/f-back") "${key[@]}" >"$work/out" 2>&1
rm -rf "$work/back/v2" "$work/back/v3" "$work/back/CLOSED"
refused store-went-backwards "went backwards" 20 "${follow[@]}" --store "file://$work/back" $(state "$work/f-back" 60) "${key[@]}"
rm -rf "$work/back" && "${publish[@]}" --store "file://$work/back" --steps 2 "${key[@]}" >"$work/out" 2>&1  # republished: a new publication
refused store-republished "now holds publication" 20 "${follow[@]}" --store "file://$work/back" $(state "$work/f-back" 60) "${key[@]}"

echo "records say what was compared (item 9) and follower lines (item 13):"
accepted follower-verify-false 60 "${follow[@]}" --store "file://$work/good" $(state "$work/f-noverify") "${key[@]}" --verify false
! grep -q "verified" "$work/out" && grep -q "bytes not compared" "$work/out" &&
  "$py" -c 'import json,sys; s=json.load(open(sys.argv[1]))["steps"]; sys.exit(0 if all(x["bitexact"] is None and x["checked"] == "frame hashes" for x in s) else 1)' \
    "$work/f-noverify/records.json" && report "" verify-false-records "no 'verified', bitexact null, checked 'frame hashes'" ||
  report "a record claims a comparison" verify-false-records ""
"${follow[@]}" --store "file://$work/good" $(state "$work/f-lines") "${key[@]}" >"$work/out" 2>&1
if grep -qE "^v2 +delta +changed +0\.000%" "$work/out"; then report "a follower line says 'changed 0.000%'" follower-lines ""
elif ! grep -q "contexts as published: [0-9]* of [1-9]" "$work/out"; then report "no 'contexts as published' line" follower-lines ""
else report "" follower-lines "$(grep -E '^v2 ' "$work/out" | cut -c1-60)"; fi

echo "careless options and shared state (item 13):"
refused link-gbps-nan "not a rate" 20 "$dcr" refit --link-gbps nan
refused link-gbps-1e-300 "not a rate" 20 "$dcr" refit --link-gbps 1e-300
refused contexts-1 "auto, true or false" 20 "$dcr" refit --contexts 1
refused contexts-yes "auto, true or false" 20 "$dcr" refit --contexts yes
cp -r "$work/good" "$work/open" && rm "$work/open/CLOSED"  # a publication still going on: its follower waits
"${follow[@]}" --store "file://$work/open" $(state "$work/shared" 60) "${key[@]}" >"$work/holder.log" 2>&1 &
holder=$!
for _ in $(seq 200); do grep -q "^v3 " "$work/holder.log" && break; sleep 0.1; done
refused two-jobs-one-state-dir "is in use by another job" 60 "${follow[@]}" --store "file://$work/open" $(state "$work/shared") "${key[@]}"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
if mkdir -p "$work/tiny-fs" && mount -t tmpfs -o size=64k tmpfs "$work/tiny-fs" 2>/dev/null; then
  mkdir -p "$work/nospace"
  refused serve-dir-full "No space left on device" 60 "${follow[@]}" --store "file://$work/good" "${key[@]}" \
    --state-dir "$work/nospace" --serve-dir "$work/tiny-fs/serve" --follow-timeout 5
  umount "$work/tiny-fs"
else
  echo "  skip serve-dir-full: cannot mount a tmpfs here (needs root)"
fi

finish
