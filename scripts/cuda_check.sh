#!/usr/bin/env bash
# The GPU checks, on a machine with only the CUDA toolkit (no MPI, UCX, HDF5 or GTest needed): builds
# cuda/ standalone and runs dcr_cuda_selfcheck, which checks the diff, apply and block-FP8 kernels
# against the CPU reference byte for byte and then times them beside a device-to-device copy.
# Writes selfcheck.log and cuda_bench.json to ${OUT:-results/cuda}. Exits 77 without a GPU.
#   scripts/cuda_check.sh            (CUDA_ARCH=90 for H100/H200 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/cuda}
mkdir -p "$out"
start=$(date +%s)
cmake -S cuda -B build-cuda -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-cuda -j"$(nproc)" >/dev/null
echo "cuda_check: built in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee "$out/gpu.csv" || true
build-cuda/dcr_cuda_selfcheck --require-gpu --json "$out/cuda_bench.json" 2>&1 | tee "$out/selfcheck.log"
echo "cuda_check: done in $(( $(date +%s) - start )) s"
