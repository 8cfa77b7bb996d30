#!/usr/bin/env bash
# Sets up, builds and runs every test: the ctest suites (unit, codec, model, fuzz replay, CUDA
# self-check that skips without a GPU) and a bounded libFuzzer run of the frame decoder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd build && ctest -j"$(nproc)" --output-on-failure --timeout 600)
FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/fuzz.sh
