#!/usr/bin/env bash
# The spool stays bounded: after each publish trainer 0 prunes it to the newest --catchup-max
# versions, so a long job does not fill the shared directory. Usage: spool_bounded.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../../scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --steps 6 \
  --compare-full false --compare-bcast false --spool-dir "$work/spool" --catchup-max 2 >"$work/log" 2>&1 ||
  { tail -20 "$work/log"; echo "0 passed, 1 failed"; exit 1; }
kept=$(cd "$work/spool" && ls -d v* | sort -V | tr '\n' ' ')
if [ "$kept" = "v5 v6 " ]; then
  echo "  spool after 6 versions with --catchup-max 2: $kept"; echo "1 passed, 0 failed"
else
  echo "FAIL: the spool holds '$kept', expected 'v5 v6 '"; echo "0 passed, 1 failed"; exit 1
fi
