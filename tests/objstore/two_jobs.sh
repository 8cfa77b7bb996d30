#!/usr/bin/env bash
# A publisher job and follower jobs joined only by an object store (dcr refit --role publish /
# --role follow). Usage: two_jobs.sh DCR_BINARY file|s3
#   file: a file:// store in a temporary directory.
#   s3:   a real S3 server: radosgw on a single-node Ceph, started here by scripts/s3_server.sh.
# Cases, each with its outcome printed:
#   1. follower A started before the publisher and killed (kill -9) mid-apply of v3, then restarted;
#      follower B started after the publisher finished (a full snapshot, then the deltas after it):
#      every version either applies is checked byte for byte against the model (--verify), and
#      their serve-dir files are identical.
#   2. a publisher killed while putting v4 leaves it without every manifest: a follower applies v3
#      and never v4; the restarted publisher redoes v4 and the follower finishes.
#   3. under a key, a frame object altered in the store, then its manifest rewritten and re-hashed
#      to match: both refused, naming the object; the follower stays on v1; restored, it finishes.
#   4. a follow job launched with a serving layout the publication does not promise: refused at
#      start, naming the promised ones.
#   5. four real HF checkpoints: a follower checking each against the checkpoints, and one given
#      only the base model (--init-checkpoint, --verify false) serving byte-identical files.
#   6. (s3) radosgw stopped for 4 s while the publisher and a follower run: both retry and finish.
set -uo pipefail
dcr=$1
kind=$2
here=$(cd "$(dirname "$0")" && pwd)
bucket=dcr-objstore
source "$here/harness.sh"  # work, pass/fail, store_url, the S3 server
# curl signs with SigV4 but leaves the payload hash, which radosgw requires, to the caller.
obj_get() {  # name key file
  if [ "$kind" = s3 ]; then
    curl -sf --aws-sigv4 "aws:amz:${AWS_REGION}:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      -H "x-amz-content-sha256: $(sha256sum </dev/null | cut -d' ' -f1)" -o "$3" "$AWS_ENDPOINT_URL/$bucket/$1/$2"
  else cp "$work/store-$1/$2" "$3"; fi
}
obj_put() {  # name key file
  if [ "$kind" = s3 ]; then
    curl -sf --aws-sigv4 "aws:amz:${AWS_REGION}:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      -H "x-amz-content-sha256: $(sha256sum "$3" | cut -d' ' -f1)" -T "$3" "$AWS_ENDPOINT_URL/$bucket/$1/$2"
  else cp "$3" "$work/store-$1/$2"; fi
}

layout=(--model tiny --trainers 2 --rollout-tp 2 --seed 7)
publish() {  # name steps [options]
  local name=$1 steps=$2; shift 2
  timeout 300 mpirun --oversubscribe -np 2 "$dcr" refit --role publish --store "$(store_url "$name")" \
    "${layout[@]}" --steps "$steps" "$@"
}
follow() {  # name steps state [options]
  local name=$1 steps=$2 state=$3; shift 3
  mkdir -p "$state"
  timeout 300 mpirun --oversubscribe -np 3 "$dcr" refit --role follow --store "$(store_url "$name")" --relays 1 \
    "${layout[@]}" --steps "$steps" --transport mpi --timeout 30 --poll 0.2 --state-dir "$state" \
    --serve-dir "$state/serve" --json "$state/records.json" "$@"
}
applied() {  # records.json -> "v:kind v:kind ..."
  /usr/bin/python3 -c 'import json,sys; print(" ".join("%d:%s" % (s["version"], s["kind"]) for s in json.load(open(sys.argv[1]))["steps"] if s["committed"] and s["bitexact"]))' "$1" 2>/dev/null
}

# ---- 1: one follower killed and restarted, one started late
# A starts before the publisher and follows v0-v2 (it ends when the store is closed at v2); the
# publisher goes on to v6; A, started again, is killed applying v3 and resumes; B starts last.
steps=6
follow one $steps "$work/a" --follow-timeout 60 >"$work/a1.log" 2>&1 &
follower=$!
sleep 1
publish one 2 --full-every 4 >"$work/p1.log" 2>&1 || { tail "$work/p1.log"; fail "publisher of case 1 (v0-v2)"; }
wait $follower || { tail "$work/a1.log"; fail "follower A (v0-v2)"; }
a=$(applied "$work/a/records.json")
[ "$a" = "0:full 1:delta 2:delta" ] && pass "follower A, started before the publisher, applied and verified: $a" ||
  fail "follower A applied '$a' of v0-v2"
publish one $steps --full-every 4 >"$work/p1b.log" 2>&1 || { tail "$work/p1b.log"; fail "publisher of case 1 (v3-v6)"; }
follow one $steps "$work/a" --follow-timeout 20 --fail-at rollout:0:apply:3 >"$work/a2.log" 2>&1 &&
  fail "follower A was not killed at v3"
follow one $steps "$work/a" --follow-timeout 20 >"$work/a3.log" 2>&1 || { tail "$work/a3.log"; fail "follower A after its restart"; }
follow one $steps "$work/b" --follow-timeout 20 >"$work/b.log" 2>&1 || { tail "$work/b.log"; fail "late follower B"; }
a=$(applied "$work/a/records.json"); b=$(applied "$work/b/records.json")
grep -q "follower resumed at committed version 2" "$work/a3.log" && [ "$a" = "3:delta 4:delta 5:delta 6:delta" ] &&
  pass "follower A killed applying v3, resumed at v2, applied and verified: $a" || fail "follower A applied '$a'"
[ "$b" = "4:full 5:delta 6:delta" ] && pass "late follower B took snapshot v4 and the deltas after it, verified: $b" ||
  fail "follower B applied '$b'"
if [ -f "$work/a/serve/replica-0/version" ] && diff -rq "$work/a/serve" "$work/b/serve" >/dev/null; then
  pass "followers A and B serve identical files at v6"
else fail "followers A and B serve different files"; fi

# ---- 4 (on case 1's store): a follow job of another serving layout is refused at start
layout=(--model tiny --trainers 2 --rollout-tp 1 --seed 7)
follow one $steps "$work/x" --follow-timeout 5 >"$work/x.log" 2>&1 && fail "a follower of another layout ran"
layout=(--model tiny --trainers 2 --rollout-tp 2 --seed 7)
grep -q "promises the serving layouts TP 2; this follow job's TP 1 (--rollout-tp 1" "$work/x.log" &&
  pass "a follow job with --rollout-tp 1 refused at start, naming the promised TP 2" || { tail "$work/x.log"; fail "layout check"; }

# ---- 2: a version whose manifests were never all written is never applied
publish two 6 --fail-at trainer:1:stream:4 >"$work/p2.log" 2>&1 && fail "publisher of case 2 was not killed"
follow two 6 "$work/c" --follow-timeout 3 >"$work/c1.log" 2>&1 && fail "follower C finished without v4"
c=$(applied "$work/c/records.json")
[ "${c##* }" = "3:delta" ] && grep -q "no new version in store" "$work/c1.log" &&
  pass "follower C applied up to v3 ($c) and waited: v4 had not every manifest" || fail "follower C applied '$c'"
publish two 6 >"$work/p2b.log" 2>&1 && grep -q "publisher resumed after version 3" "$work/p2b.log" ||
  { tail "$work/p2b.log"; fail "restarted publisher of case 2"; }
follow two 6 "$work/c" --follow-timeout 20 >"$work/c2.log" 2>&1 && c=$(applied "$work/c/records.json") &&
  [ "$c" = "4:delta 5:delta 6:delta" ] && pass "the restarted publisher redid v4; follower C finished: $c" ||
  { tail "$work/c2.log"; fail "follower C after the publisher's restart"; }

# ---- 3: tampered objects under a key
"$dcr" keygen "$work/key" >/dev/null
keyed=(--key-file "$work/key")
publish three 3 --full-every 100 "${keyed[@]}" >"$work/p3.log" 2>&1 || { tail "$work/p3.log"; fail "publisher of case 3"; }
obj_get three v2/w0-000000.frame "$work/frame" && cp "$work/frame" "$work/frame.orig"
/usr/bin/python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[len(b)//2]^=0x10; open(sys.argv[1],"wb").write(b)' "$work/frame"
obj_put three v2/w0-000000.frame "$work/frame"
follow three 3 "$work/d" --follow-timeout 20 "${keyed[@]}" >"$work/d1.log" 2>&1 && fail "follower D applied a tampered frame"
d=$(applied "$work/d/records.json")
[ "$d" = "0:full 1:delta" ] && grep -q "w0-000000.frame' does not match the hash in its manifest" "$work/d1.log" &&
  pass "an altered frame object refused, naming it; follower D stays on v1 ($d)" || { tail "$work/d1.log"; fail "follower D applied '$d'"; }
obj_get three v2/w0.MANIFEST "$work/manifest" && cp "$work/manifest" "$work/manifest.orig"
/usr/bin/python3 - "$work/manifest" "$work/frame" <<'PY'
import sys, xxhash
path, frame = sys.argv[1], open(sys.argv[2], "rb").read()
lines = open(path).read().splitlines(keepends=True)
out = []
for l in lines[:-1]:
    w = l.split()
    if w[0] == "frame" and w[1] == "w0-000000.frame":
        l = "frame %s %d %016x\n" % (w[1], len(frame), xxhash.xxh3_64_intdigest(frame))
    out.append(l)
body = "".join(out)
open(path, "w").write(body + "end %d %016x\n" % (sum(1 for l in out if l.startswith("frame ")), xxhash.xxh3_64_intdigest(body.encode())))
PY
obj_put three v2/w0.MANIFEST "$work/manifest"
follow three 3 "$work/d" --follow-timeout 20 "${keyed[@]}" >"$work/d2.log" 2>&1 && fail "follower D applied a re-hashed manifest"
grep -q "w0.MANIFEST.*HMAC\|w0.MANIFEST.*mac\|w0.MANIFEST.*authentic" "$work/d2.log" &&
  pass "the manifest rewritten and re-hashed to match refused by its MAC" || { tail "$work/d2.log"; fail "case 3 re-hashed manifest"; }
obj_put three v2/w0-000000.frame "$work/frame.orig"; obj_put three v2/w0.MANIFEST "$work/manifest.orig"
follow three 3 "$work/d" --follow-timeout 20 "${keyed[@]}" >"$work/d3.log" 2>&1 && d=$(applied "$work/d/records.json") &&
  [ "$d" = "2:delta 3:delta" ] && pass "restored objects: follower D resumed and finished, verified: $d" ||
  { tail "$work/d3.log"; fail "follower D after the objects were restored"; }

# ---- 5: real HF checkpoints; a follower that has only the base model (as a rollout cluster would)
/usr/bin/python3 "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/ck" --versions 4 --shards 2 \
  >/dev/null || fail "making the HF checkpoints"
hf=(--trainers 2 --rollout-tp 2)
timeout 300 mpirun --oversubscribe -np 2 "$dcr" refit --role publish --store "$(store_url six)" "${hf[@]}" \
  --checkpoints "$work/ck/step-*" >"$work/p6.log" 2>&1 || { tail "$work/p6.log"; fail "publisher of checkpoints"; }
layout=("${hf[@]}" --checkpoints "$work/ck/step-*")
follow six 0 "$work/g" --follow-timeout 20 >"$work/g.log" 2>&1 || { tail "$work/g.log"; fail "verifying follower G"; }
layout=("${hf[@]}" --init-checkpoint "$work/ck/step-0000" --verify false)
follow six 0 "$work/h" --follow-timeout 20 >"$work/h.log" 2>&1 || { tail "$work/h.log"; fail "follower H (base model only)"; }
layout=(--model tiny --trainers 2 --rollout-tp 2 --seed 7)
g=$(applied "$work/g/records.json")
[ "$g" = "0:full 1:delta 2:delta 3:delta" ] && diff -rq "$work/g/serve" "$work/h/serve" >/dev/null &&
  pass "4 HF checkpoints: follower G verified each ($g); follower H, given only the base model, serves the same files" ||
  fail "case 6: follower G applied '$g', or H serves other files"

# ---- 6: the server stopped mid-run
if [ "$kind" = s3 ]; then
  follow four 30 "$work/e" --follow-timeout 60 >"$work/e.log" 2>&1 &
  follower=$!
  publish four 30 >"$work/p4.log" 2>&1 &
  publisher=$!
  for _ in $(seq 600); do grep -q "^v3 " "$work/e.log" && break; sleep 0.1; done  # mid-run: v3 applied
  "$root/scripts/s3_server.sh" stop-rgw "$server" >/dev/null 2>&1
  sleep 4
  "$root/scripts/s3_server.sh" start-rgw "$server" >/dev/null 2>&1
  wait $publisher && p=ok || p=failed
  wait $follower && e=$(applied "$work/e/records.json") || e=failed
  grep -q "retrying for up to" "$work/p4.log" "$work/e.log" || p="never held up (the stop missed the run)"
  [ "$p" = ok ] && [ "${e##* }" = "30:delta" ] && pass "radosgw stopped for 4 s mid-run: publisher and follower retried and finished (v0-v30; requests held up: publisher $(grep -c "retrying for up to" "$work/p4.log"), follower $(grep -c "retrying for up to" "$work/e.log"))" ||
    { tail "$work/p4.log" "$work/e.log"; fail "case 4: publisher $p, follower '$e'"; }
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
