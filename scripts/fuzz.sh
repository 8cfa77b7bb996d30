#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + ASan + UBSan) into build-fuzz and runs each: the
# frame decoder (and sealed frames) for FUZZ_SECONDS (default 60), the checkpoint readers, the
# journal / spool manifest readers, the INI configuration, the model-family files with
# config.json and the S3 client's readers of a server's answers (s3) for FUZZ_FILE_SECONDS
# (default 30) each; FUZZ_RUNS sets an input count instead, and
# FUZZ_TARGETS a subset (e.g. FUZZ_TARGETS=family FUZZ_RUNS=1000000 scripts/fuzz.sh).
# Fails on any crash, leak, sanitizer report or input that runs 25 s (then it leaves the failing input as
# build-fuzz/crash-*: add it to tests/fuzz/regressions[-<target>]).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDCR_CUDA=OFF -DDCR_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
targets=(decode checkpoint state config family s3)
cmake --build build-fuzz -j"$(nproc)" --target fuzz_decode fuzz_decode_replay fuzz_checkpoint fuzz_checkpoint_replay \
  fuzz_state fuzz_state_replay fuzz_config fuzz_config_replay fuzz_family fuzz_family_replay fuzz_s3 fuzz_s3_replay
export DCR_LOG_LEVEL=error  # readers warn about every damaged input
[ -n "${FUZZ_TARGETS:-}" ] && read -r -a targets <<<"$FUZZ_TARGETS"
for target in "${targets[@]}"; do
  corpus=build-fuzz/corpus-$target
  regressions=tests/fuzz/regressions
  [ "$target" = decode ] || regressions=tests/fuzz/regressions-$target
  build-fuzz/tests/fuzz_${target}_replay --write-seeds "$corpus"
  cp "$regressions"/* "$corpus"/  # inputs that once failed stay in the corpus
  time_limit=$seconds max_len=4096
  [ "$target" = decode ] || { time_limit=${FUZZ_FILE_SECONDS:-30}; max_len=65536; }
  limit=(-max_total_time="$time_limit")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  echo "fuzz_$target:"
  build-fuzz/tests/fuzz_$target "${limit[@]}" -timeout=25 -max_len=$max_len -print_final_stats=1 -artifact_prefix=build-fuzz/ \
    "$corpus" 2>&1 | tail -n 25
done
