#!/usr/bin/env bash
# A full disk under the state directory and the spool (a small tmpfs this test mounts; needs root).
#  1. Full before the job starts: the rollouts cannot make their votes durable ("No space left on
#     device"), so v0 is not committed and the job stops; freed, the same command runs.
#  2. Full after v2: snapshots and spool copies (caches that only make restarts cheaper) fail with a
#     warning naming the cause, while each commit record still fits its journal, so v3 and v4 commit
#     durably; no snapshot or spool file is left half-written; freed, the same command resumes at v4
#     (a full sync: its caches are missing) and finishes v5 bit-exact.
# Usage: no_space.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
mnt="$work/disk"
mkdir -p "$mnt"
cleanup() { umount "$mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=24m tmpfs "$mnt" 2>"$work/mount.err"; then
  echo "SKIP: cannot mount a tmpfs here ($(cat "$work/mount.err")); run as root"; exit 0
fi
run() {  # steps log
  timeout 300 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --steps "$1" \
    --compare-full false --compare-bcast false --timeout 30 --state-dir "$mnt/state" --spool-dir "$mnt/spool" >"$2" 2>&1
}
all_at() { [ "$("$dcr" state "$mnt/state" 2>/dev/null | grep -c "committed v$1 ")" -eq 5 ]; }
fill() { dd if=/dev/zero of="$mnt/filler" bs=64k status=none 2>/dev/null; }
failed=0
checks=0
check() {
  checks=$((checks + 1))
  if eval "$2"; then echo "  ok    $1"; else echo "  FAIL  $1"; failed=$((failed + 1)); fi
}

fill
run 2 "$work/full.log"; code=$?
check "disk full at the start: the job stops (exit $code)" "[ $code -ne 0 ]"
check "  naming the cause" "grep -q 'journal: .*No space left on device' '$work/full.log'"
check "  and commits nothing" "grep -q '^v0 .*NOT COMMITTED' '$work/full.log'"
rm -f "$mnt/filler"; rm -rf "$mnt/state" "$mnt/spool"
run 2 "$work/run1.log"
check "space freed: v2 committed" "all_at 2"
fill
run 4 "$work/run2.log"; code=$?
check "disk full after v2: v3 and v4 still commit durably (exit $code)" "[ $code -eq 0 ] && all_at 4"
check "  snapshot and spool failures are reported with the cause" \
  "grep -q 'snapshot not written.*No space left on device' '$work/run2.log' && grep -q 'not published to the spool.*No space left on device' '$work/run2.log'"
check "  no half-written snapshot or spool file is left" "[ -z \"\$(find '$mnt' -name '*.tmp')\" ]"
rm -f "$mnt/filler"
run 5 "$work/run3.log"; code=$?
check "space freed: the same command resumes at v4 and finishes v5 bit-exact (exit $code)" \
  "grep -q 'resumed at committed version 4' '$work/run3.log' && grep -q '^v5 .*verified' '$work/run3.log' && all_at 5"
check "no HDF5 library error at exit" "! grep -q 'HDF5: infinite loop' '$work/run2.log' '$work/run3.log'"
[ "$failed" -eq 0 ] || { for l in full run2 run3; do echo "--- $l:"; grep -v '^ ' "$work/$l.log" | tail -8; done; }
echo "$((checks - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
