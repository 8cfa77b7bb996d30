# Sourced by the two-job tests (two_jobs.sh, fleet.sh) after they set `kind` (file or s3) and
# `bucket`: a work directory removed at exit (kept with KEEP_WORK=1), pass/fail counters, the
# store each case uses (store_url NAME) and, for s3, radosgw started here by scripts/s3_server.sh
# and stopped at exit. Background jobs the test adds to `pids` are killed at exit.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/mpi_env.sh"
work=$(mktemp -d)
server=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "$server" ] && "$root/scripts/s3_server.sh" stop "$server" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP_WORK:-}" ] && trap - EXIT && echo "work: $work"
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

if [ "$kind" = s3 ]; then
  server=$work/ceph
  "$root/scripts/s3_server.sh" start "$server" auto >"$work/server.log" 2>&1 || {
    cat "$work/server.log"; echo "FAIL: the S3 server (radosgw) did not start"; exit 1; }
  set -a; source "$server/env"; set +a
fi
store_url() {  # name
  if [ "$kind" = s3 ]; then echo "s3://$bucket/$1"; else echo "file://$work/store-$1"; fi
}
