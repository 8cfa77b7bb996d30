#!/usr/bin/env bash
# The spool stays bounded: after each commit trainer 0 prunes it to the newest --spool-keep versions
# (default --catchup-max), so a long job does not fill the shared directory; spool and state files
# are their owner's only (0600, directories 0700). Usage: spool_bounded.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
run() {  # spool steps options...
  local spool=$1 steps=$2
  shift 2
  timeout 300 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --steps "$steps" \
    --compare-full false --compare-bcast false --spool-dir "$spool" "$@" >"$spool.log" 2>&1 ||
    { tail -20 "$spool.log"; echo "0 passed, 1 failed"; exit 1; }
}
kept() { (cd "$1" && ls -d v* | sort -V | tr '\n' ' '); }
run "$work/spool" 6 --catchup-max 2
[ "$(kept "$work/spool")" = "v5 v6 " ] && echo "  ok    after 6 versions with --catchup-max 2: $(kept "$work/spool")" ||
  { echo "  FAIL  --catchup-max 2 kept '$(kept "$work/spool")', expected 'v5 v6 '"; failed=1; }
run "$work/keep" 5 --spool-keep 3 --state-dir "$work/state"
[ "$(kept "$work/keep")" = "v3 v4 v5 " ] && echo "  ok    after 5 versions with --spool-keep 3: $(kept "$work/keep")" ||
  { echo "  FAIL  --spool-keep 3 kept '$(kept "$work/keep")'"; failed=1; }
# 50 versions with the default retention (--catchup-max 16): the bytes on disk stop growing.
run "$work/fifty" 50
echo "  spool after 50 versions, default retention: $(kept "$work/fifty" | wc -w) versions, $(du -sb "$work/fifty" | cut -f1) bytes"
[ "$(kept "$work/fifty" | wc -w)" -eq 16 ] || { echo "  FAIL  expected 16 versions"; failed=1; }
modes=$(stat -c '%a %n' "$work/state" "$work/state"/rank-0.journal "$work/state"/rollout-0.h5 "$work/keep" \
  "$work/keep/v5" "$work/keep/v5/w0.MANIFEST" "$(find "$work/keep/v5" -name '*.frame' | head -1)")
if echo "$modes" | awk '{ if ($1 != "600" && $1 != "700") bad = 1 } END { exit bad }'; then
  echo "  ok    state and spool files 0600, directories 0700"
else
  echo "  FAIL  permissions:"; echo "$modes"; failed=1
fi
[ "$failed" -eq 0 ] && echo "4 passed, 0 failed" || { echo "some failed"; exit 1; }
