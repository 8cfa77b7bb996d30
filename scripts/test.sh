#!/usr/bin/env bash
# Sets up, builds and runs every test: the ctest suites (unit, codec, layout, transport, multi-rank
# refit, fault matrix, checkpoints, fuzz replay, CUDA self-check that skips without a GPU), a bounded
# libFuzzer run of the frame decoder, and the refit job submitted to a real single-node Slurm.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd build && ctest -j"$(nproc)" --output-on-failure --timeout 900)
FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/fuzz.sh
scripts/slurm_ci.sh
