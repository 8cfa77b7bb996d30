#!/usr/bin/env bash
# Runs the hostile-input reproducers (files, the model surfaces, checkpoints rewritten under a read,
# hostile stores), the damaged-state resumes, the sealed-frame cases (forged,
# unsealed and tampered frames, key rotation) and staged apply (kills while staging and in the
# pause, sealed frames spilled and read back) against a dcr built with ASan and
# UBSan (clang, in build-fuzz, the configuration scripts/fuzz.sh makes): every case must end in its
# clear error or its correct resume with no sanitizer report (reports exit 99, not 1 or 2).
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDCR_CUDA=OFF -DDCR_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target dcr_cli
# Open MPI and UCX keep allocations until exit: leak reports from them are not ours.
export ASAN_OPTIONS=detect_leaks=0:exitcode=99:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:exitcode=99
# Two lanes at once (each case is mostly waiting on its ranks); each script's output is printed
# whole when it ends, and any failure fails the run.
lane() {
  local failed=0
  for script in "$@"; do
    "$script" build-fuzz/dcr >"build-fuzz/$(basename "$script").log" 2>&1 || { echo "FAILED: $script"; failed=1; }
    cat "build-fuzz/$(basename "$script").log"
  done
  return $failed
}
lane tests/hostile/hostile_store.sh tests/hostile/hostile_inputs.sh tests/fault/damaged_journals.sh tests/fault/staged.sh &
first=$!
lane tests/hostile/hostile_checkpoints.sh tests/hostile/hostile_models.sh tests/fault/untrusted_state.sh \
  tests/fault/sealed_frames.sh &
second=$!
status=0
wait $first || status=1
wait $second || status=1
exit $status
