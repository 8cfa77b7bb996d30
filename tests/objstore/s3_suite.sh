#!/usr/bin/env bash
# The object store suite (tests/store/test_object_store.cc, every backend) and the S3 backend's own
# tests (tests/store/test_s3_store.cc) against a real S3 server: radosgw on a single-node Ceph,
# started here by scripts/s3_server.sh and stopped at the end.
# Usage: s3_suite.sh TEST_OBJECT_STORE_BINARY TEST_S3_STORE_BINARY
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=$(mktemp -d)
trap '"$here/../../scripts/s3_server.sh" stop "$server" >/dev/null 2>&1; rm -rf "$server"' EXIT
"$here/../../scripts/s3_server.sh" start "$server" auto >"$server/start.log" 2>&1 || {
  cat "$server/start.log"; echo "FAIL: the S3 server (radosgw) did not start"; exit 1; }
set -a; source "$server/env"; set +a
export DCR_S3_SERVER_DIR=$server
"$1" --gtest_filter='*s3*:*S3*' && "$2"
