#!/usr/bin/env bash
# Authenticated and encrypted frames end to end (dcr refit under mpirun, both data planes):
#  - jobs sealed with HMAC-SHA-256 (UCX) and AES-256-GCM (MPI) commit every version bit-exact, and the
#    spool holds sealed frames;
#  - a forged frame (sealed under another key of the same id, every XXH3 hash consistent) and an
#    unsealed one are refused by the relay, and nothing is committed: every journal stays at v1;
#  - a key file that others may read is refused;
#  - a job rotates keys between versions: key 2 appended, the job resumes (catching up from the spool
#    frames sealed under key 1) and seals under key 2; key 1 dropped, it resumes again;
#  - a spool frame tampered with (and its manifest re-hashed) is refused at catch-up, and the rollout
#    takes a full sync instead.
# Usage: sealed_frames.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { echo "  ok    $1"; passed=$((passed + 1)); }
fail() { echo "  FAIL  $1: $2"; failed=$((failed + 1)); }
run() {  # log transport args...
  local log=$1 transport=$2
  shift 2
  timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 \
    --transport "$transport" --compare-full false --compare-bcast false --timeout 30 "$@" >"$log" 2>&1
}
all_at() {  # state version: every rank's journal says committed vN
  [ "$("$dcr" state "$1" | grep -c "committed v$2 ")" -eq 5 ]
}
key="$work/job.key"
"$dcr" keygen "$key" >/dev/null || { echo "FAIL keygen"; exit 1; }

for t in ucx mpi; do
  enc=false; [ "$t" = mpi ] && enc=true
  name="sealed job ($t, encrypt $enc)"
  if run "$work/$t.log" "$t" --steps 3 --key-file "$key" --encrypt "$enc" --state-dir "$work/$t" \
      --spool-dir "$work/$t/spool" && grep -q "frames sealed with" "$work/$t.log"; then
    seal=$(od -An -tu1 -j17 -N1 "$(find "$work/$t/spool" -name '*.frame' | head -1)" | tr -d ' ')
    [ "$seal" = "$([ "$enc" = true ] && echo 2 || echo 1)" ] && ok "$name" || fail "$name" "spool frame seal byte is $seal"
  else
    fail "$name" "$(tail -3 "$work/$t.log")"
  fi
  for fault in forge unsealed; do
    name="$fault frame refused ($t), nothing committed"
    run "$work/$fault-$t.log" "$t" --steps 3 --key-file "$key" --encrypt "$enc" --state-dir "$work/$fault-$t" \
      --fault "$fault@2"
    why=""
    grep -q "tag does not match\|not authenticated (no MAC)" "$work/$fault-$t.log" || why="no refusal in the log"
    grep -q "^v2 .*NOT COMMITTED" "$work/$fault-$t.log" || why="${why:-v2 not reported as not committed}"
    all_at "$work/$fault-$t" 1 || why="${why:-journals moved past v1}"
    [ -z "$why" ] && ok "$name" || fail "$name" "$why"
  done
done

chmod 644 "$key"
run "$work/loose.log" ucx --steps 1 --key-file "$key"
grep -q "chmod 600" "$work/loose.log" && ok "a key file others may read is refused" ||
  fail "loose key file" "$(tail -2 "$work/loose.log")"
chmod 600 "$key"

# Rotation between versions, across resumes that catch up from the sealed spool.
state="$work/rotate"
args=(--key-file "$key" --encrypt true --state-dir "$state" --spool-dir "$state/spool" --snapshot-every 2)
why=""
run "$work/rotate1.log" ucx --steps 3 "${args[@]}" || why="first run failed"
"$dcr" keygen "$key" >/dev/null
[ -n "$why" ] || run "$work/rotate2.log" ucx --steps 5 "${args[@]}" || why="run after adding key 2 failed"
[ -n "$why" ] || grep -q "caught up to v3 from the spool" "$work/rotate2.log" || why="no catch-up over key-1 frames"
[ -n "$why" ] || grep -q "under key id 2 .*(2 key(s) accepted)" "$work/rotate2.log" || why="not sealing under key 2"
grep "^dcr-key 2 " "$key" >"$key.new" && chmod 600 "$key.new" && mv "$key.new" "$key"
[ -n "$why" ] || run "$work/rotate3.log" ucx --steps 6 "${args[@]}" || why="run after dropping key 1 failed"
[ -n "$why" ] || grep -q "caught up to v5 from the spool" "$work/rotate3.log" || why="no catch-up over key-2 frames"
[ -n "$why" ] || all_at "$state" 6 || why="journals not at v6"
[ -z "$why" ] && ok "keys rotated between versions (1 -> 1+2 -> 2), catch-up across the switch" || fail "rotation" "$why"

# A sealed spool frame tampered with, its manifest re-hashed (XXH3-64) as an attacker with write
# access to the spool would: the seal refuses it at catch-up and the rollouts take a full sync.
why=""
run "$work/tamper1.log" ucx --steps 7 "${args[@]}" || why="run to v7 failed"  # snapshot v6, spool v7
[ -n "$why" ] || /usr/bin/python3 - "$state/spool/v7/w0.MANIFEST" <<'PY' || why="could not tamper with the spool"
import os, sys, xxhash
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
first = next(i for i, l in enumerate(lines) if l.startswith("frame "))
name, size, _ = lines[first].split()[1:]
frame = os.path.join(os.path.dirname(path), name)
data = bytearray(open(frame, "rb").read())
data[150] ^= 0x40  # a payload (ciphertext) byte
open(frame, "wb").write(data)
lines[first] = "frame %s %s %016x\n" % (name, size, xxhash.xxh3_64_intdigest(bytes(data)))
body = "".join(lines[:-1])
open(path, "w").write(body + "end %s %016x\n" % (lines[-1].split()[1], xxhash.xxh3_64_intdigest(body.encode())))
PY
[ -n "$why" ] || run "$work/tamper2.log" ucx --steps 8 "${args[@]}" || why="run over the tampered spool failed"
[ -n "$why" ] || grep -q "catch-up from the spool.*tag does not match" "$work/tamper2.log" || why="tampered frame not refused"
[ -n "$why" ] || all_at "$state" 8 || why="journals not at v8"
[ -z "$why" ] && ok "a tampered spool frame (manifest re-hashed) is refused at catch-up; full sync instead" ||
  fail "tampered spool" "$why"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
