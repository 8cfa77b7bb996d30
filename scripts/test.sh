#!/usr/bin/env bash
# Sets up, builds and runs every test: the ctest suites (unit, codec, layout, transport, multi-rank
# refit, fault matrix, checkpoints, real models, hostile inputs, a publisher and follower jobs joined
# by an object store (file:// and a real S3 server, radosgw, started by the test), fuzz replay, the refit across
# network-namespace nodes (tests/cluster; skips without root), CUDA self-check that skips without a
# GPU), bounded libFuzzer runs (frame decoder, checkpoint readers, journal and spool manifest), the
# hostile and damaged-state cases again under ASan/UBSan, and the refit and restart-loop jobs
# submitted to a real 4-node Slurm cluster of namespaces (one node where namespaces cannot be made).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd build && ctest -j"$(nproc)" --output-on-failure --timeout 900)
FUZZ_SECONDS=${FUZZ_SECONDS:-60} FUZZ_FILE_SECONDS=${FUZZ_FILE_SECONDS:-20} scripts/fuzz.sh
scripts/sanitize.sh
scripts/slurm_ci.sh --nodes 4
