#!/usr/bin/env bash
# Encode and apply timed stage by stage (memcpy, XXH3 of both copies, the fused scan, scan + tokens,
# the whole encode, on one thread and on --encode-threads, decoding alone, the whole apply) on a
# bf16 step shaped like training, with what tokenising apart, encode beyond the scan, decoding and
# the rest of apply cost per change; keeps the table under results/encode-stages-<timestamp>/.
# Usage: perf/encode_stages.sh [build/dcr_encode_stages options], e.g. --rates 3 --reps 9
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr_encode_stages ] || scripts/build.sh
out=results/encode-stages-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
build/dcr_encode_stages "$@" | tee "$out/stages.txt"
echo "results in $out"
