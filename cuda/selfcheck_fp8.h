// The block-FP8 part of dcr_cuda_selfcheck: quantize_fp8_block on the GPU against the CPU rule.
#pragma once

#include <vector>

#include "selfcheck_support.h"

namespace selfcheck {

// Every finite bf16 value, edge blocks, zero blocks of signed zeros, outliers and a strided box,
// byte for byte and scale for scale against dcr::quantize_fp8_block; a NaN block refused by name.
bool run_fp8_checks();
// quantize_fp8_block on 1 GiB of bf16 (its rows): appended to *rows beside a device-to-device copy.
bool benchmark_fp8(std::vector<Timing>* rows);

}  // namespace selfcheck
