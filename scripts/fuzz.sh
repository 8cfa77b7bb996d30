#!/usr/bin/env bash
# Builds the decoder fuzz target with clang (libFuzzer + ASan + UBSan) into build-fuzz and runs it
# for FUZZ_SECONDS (default 60) or FUZZ_RUNS inputs. Fails on any crash, leak or sanitizer report
# (then it leaves the failing input as build-fuzz/crash-*: add it to tests/fuzz/regressions).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDCR_CUDA=OFF -DDCR_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_decode fuzz_decode_replay
corpus=build-fuzz/corpus
build-fuzz/tests/fuzz_decode_replay --write-seeds "$corpus"
cp tests/fuzz/regressions/* "$corpus"/  # inputs that once failed stay in the corpus
limit=(-max_total_time="$seconds")
[ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
build-fuzz/tests/fuzz_decode "${limit[@]}" -max_len=4096 -print_final_stats=1 -artifact_prefix=build-fuzz/ "$corpus" 2>&1 | tail -n 25
