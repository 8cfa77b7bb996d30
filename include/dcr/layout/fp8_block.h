// Block FP8, as vLLM loads it for checkpoints with `weight_block_size: [128, 128]` (issue 34, the
// first step: the quantizer every FP8 path must match). A bf16 weight [N, K] becomes
//   weight            float8_e4m3fn [N, K]           (OCP E4M3: bias 7, no infinities, 0x7F/0xFF NaN)
//   weight_scale_inv  float32 [ceil(N/128), ceil(K/128)], one per 128 x 128 block (row-major;
//                     edge blocks are smaller), so that weight ~ e4m3 value * scale.
// The rule, exactly:
//   amax  = the largest |x| in the block (bf16 values, exact in fp32); a block holding a NaN or an
//           infinity is refused.
//   scale = amax / 448 in fp32 (IEEE division, round to nearest even); an all-zero block (amax 0,
//           signed zeros included) has scale 1.
//   q     = E4M3(x / scale): the fp32 quotient (round to nearest even) rounded to the nearest E4M3
//           value, ties to the even code, saturating: any magnitude at or above 448 gives ±448
//           (0x7E / 0xFE). The sign is kept, zeros included (-0 gives 0x80).
#pragma once

#include <cstdint>

#include "dcr/core/box.h"
#include "dcr/core/status.h"

namespace dcr {

constexpr uint64_t kFp8Block = 128;
constexpr float kE4m3Max = 448.0f;

// fp32 -> E4M3 (round to nearest even, saturating to ±448; NaN gives 0x7F with the sign).
uint8_t f32_to_e4m3_sat(float value);
// Exact: every E4M3 value is an fp32 value (0x7F / 0xFF: NaN).
float e4m3_to_f32(uint8_t bits);

// The scale of one block (see the rule above).
float fp8_block_scale(float amax);

// Block (r0, c0) of a bf16 matrix [rows, cols] (row-major) is rows [r0, r0 + 128) x columns
// [c0, c0 + 128), cut at the matrix's edges; r0 and c0 are multiples of 128.
// Its scale; invalid_argument naming the block and the element for a NaN or infinity.
Status fp8_block_scale_at(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint64_t r0, uint64_t c0, float* scale);
// Its E4M3 bytes at `scale`: element (r, c) goes to dst[(r - r0) * pitch + (c - c0)].
void fp8_quantize_block(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint64_t r0, uint64_t c0, float scale,
                        uint8_t* dst, uint64_t pitch);

// Whether `box` of a [rows, cols] matrix lies on whole `block` x `block` blocks: it starts on a
// block corner and ends on a block edge or the matrix's.
inline bool on_whole_blocks(const Box& box, uint64_t rows, uint64_t cols, uint64_t block = kFp8Block) {
  return box.row0 % block == 0 && box.col0 % block == 0 && (box.rows % block == 0 || box.row0 + box.rows == rows) &&
         (box.cols % block == 0 || box.col0 + box.cols == cols);
}

// Quantizes the bf16 matrix `bf16` [rows, cols] (row-major) into `e4m3` [rows, cols] and `scales`
// [ceil(rows/128), ceil(cols/128)]. invalid_argument naming the block that holds a NaN or infinity.
Status quantize_fp8_block(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint8_t* e4m3, float* scales);

}  // namespace dcr
