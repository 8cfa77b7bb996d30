#!/usr/bin/env bash
# Runs the codec benchmark and keeps its table and JSON under results/codec-<timestamp>/.
# Usage: perf/bench_codec.sh [extra `dcr bench codec` options], e.g. --model large --reps 5
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
out=results/codec-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
build/dcr bench codec --config configs/bench_codec.ini --json "$out/codec.json" "$@" | tee "$out/codec.txt"
echo "results in $out"
