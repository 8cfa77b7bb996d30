#!/usr/bin/env bash
# Runs the hostile-input reproducers (files, the model surfaces, checkpoints rewritten under a read,
# hostile stores), the damaged-state resumes and the sealed-frame cases (forged,
# unsealed and tampered frames, key rotation) against a dcr built with ASan and
# UBSan (clang, in build-fuzz, the configuration scripts/fuzz.sh makes): every case must end in its
# clear error or its correct resume with no sanitizer report (reports exit 99, not 1 or 2).
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDCR_CUDA=OFF -DDCR_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target dcr_cli
# Open MPI and UCX keep allocations until exit: leak reports from them are not ours.
export ASAN_OPTIONS=detect_leaks=0:exitcode=99:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:exitcode=99
tests/hostile/hostile_inputs.sh build-fuzz/dcr
tests/hostile/hostile_models.sh build-fuzz/dcr
tests/fault/damaged_journals.sh build-fuzz/dcr
tests/fault/untrusted_state.sh build-fuzz/dcr
tests/fault/sealed_frames.sh build-fuzz/dcr
tests/hostile/hostile_checkpoints.sh build-fuzz/dcr
tests/hostile/hostile_store.sh build-fuzz/dcr
