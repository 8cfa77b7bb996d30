#include "dcr/layout/fp8_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "dcr/core/dtype.h"

namespace dcr {
namespace {

constexpr int kBias = 7;
constexpr int kMinNormalExponent = 1 - kBias;  // 2^-6
constexpr uint8_t kMaxFinite = 0x7E;           // 448 = 1.75 * 2^8
constexpr uint8_t kNaN = 0x7F;

constexpr uint32_t kF32Bias = 127;
constexpr uint32_t kAbs448 = 0x43E00000;        // 448.0f
constexpr uint32_t kAbsMinNormal = 0x3C800000;  // 2^-6, E4M3's smallest normal

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// fp32 -> E4M3 bits without branches (so the quantizer's loop vectorizes); every path is computed
// and the right one selected:
// - |x| in [2^-6, 448): the fp32 mantissa rounded from 23 to 3 bits, ties to even (a carry rounds
//   into the exponent), the exponent rebased from fp32's bias to E4M3's;
// - |x| below 2^-6: x in steps of 2^-9 (0..8; 8 is the smallest normal), rounded to nearest even
//   by adding 2^23, whose ulp is 1 (x * 2^9 is exact: a power of two);
// - 448 and above (infinities too): 0x7E; NaN: 0x7F; the sign bit kept throughout.
inline uint8_t e4m3_bits(float value) {
  const uint32_t bits = bits_of(value), magnitude = bits & 0x7FFFFFFF;
  const uint32_t normal = ((magnitude + 0x7FFFF + ((magnitude >> 20) & 1)) >> 20) - ((kF32Bias - kBias) << 3);
  const uint32_t subnormal = bits_of(float_of(magnitude) * 512.0f + 8388608.0f) - bits_of(8388608.0f);
  uint32_t code = magnitude < kAbsMinNormal ? subnormal : normal;
  code = magnitude >= kAbs448 ? kMaxFinite : code;
  code = magnitude > 0x7F800000 ? kNaN : code;
  return static_cast<uint8_t>(((bits >> 24) & 0x80) | code);
}

}  // namespace

uint8_t f32_to_e4m3_sat(float value) { return e4m3_bits(value); }

float e4m3_to_f32(uint8_t bits) {
  const float sign = bits & 0x80 ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xF, mantissa = bits & 7;
  if ((bits & 0x7F) == kNaN) return std::nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), kMinNormalExponent - 3);
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - kBias - 3);
}

float fp8_block_scale(float amax) { return amax == 0.0f ? 1.0f : amax / kE4m3Max; }

Status fp8_block_scale_at(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint64_t r0, uint64_t c0, float* scale) {
  const uint64_t r1 = std::min(rows, r0 + kFp8Block), c1 = std::min(cols, c0 + kFp8Block);
  uint16_t largest = 0;  // bf16 magnitudes order as their bits do; 0x7F80 and above: infinity or NaN
  for (uint64_t r = r0; r < r1; ++r) {
    for (uint64_t c = c0; c < c1; ++c) largest = std::max<uint16_t>(largest, bf16[r * cols + c] & 0x7FFF);
  }
  if (largest < 0x7F80) return *scale = fp8_block_scale(bf16_to_f32(largest)), Status::ok();
  uint64_t r = r0, c = c0;
  while ((bf16[r * cols + c] & 0x7FFF) < 0x7F80) {
    if (++c == c1) c = c0, ++r;
  }
  return Status(Code::invalid_argument, "block FP8: the block at row " + std::to_string(r0) + ", column " +
                                            std::to_string(c0) + " holds a non-finite value (element [" + std::to_string(r) +
                                            ", " + std::to_string(c) + "]); it has no scale");
}

void fp8_quantize_block(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint64_t r0, uint64_t c0, float scale,
                        uint8_t* dst, uint64_t pitch) {
  const uint64_t r1 = std::min(rows, r0 + kFp8Block), c1 = std::min(cols, c0 + kFp8Block);
  for (uint64_t r = r0; r < r1; ++r) {
    uint8_t* out = dst + (r - r0) * pitch - c0;
    for (uint64_t c = c0; c < c1; ++c) out[c] = e4m3_bits(bf16_to_f32(bf16[r * cols + c]) / scale);
  }
}

Status quantize_fp8_block(const uint16_t* bf16, uint64_t rows, uint64_t cols, uint8_t* e4m3, float* scales) {
  const uint64_t block_cols = (cols + kFp8Block - 1) / kFp8Block;
  for (uint64_t r0 = 0; r0 < rows; r0 += kFp8Block) {
    for (uint64_t c0 = 0; c0 < cols; c0 += kFp8Block) {
      float scale = 0;
      DCR_TRY(fp8_block_scale_at(bf16, rows, cols, r0, c0, &scale));
      scales[(r0 / kFp8Block) * block_cols + c0 / kFp8Block] = scale;
      fp8_quantize_block(bf16, rows, cols, r0, c0, scale, e4m3 + r0 * cols + c0, cols);
    }
  }
  return Status::ok();
}

}  // namespace dcr
