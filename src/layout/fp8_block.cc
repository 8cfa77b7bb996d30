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

// The integer nearest `x` (>= 0), ties to even: exact here, since x < 2^24.
uint32_t round_half_even(float x) {
  const float floor = std::floor(x), rest = x - floor;
  uint32_t n = static_cast<uint32_t>(floor);
  if (rest > 0.5f || (rest == 0.5f && (n & 1))) ++n;
  return n;
}

// |value| as E4M3 magnitude bits (0..0x7E).
uint8_t magnitude_bits(float a) {
  if (a >= kE4m3Max) return kMaxFinite;
  if (a == 0.0f) return 0;
  int exponent = 0;
  std::frexp(a, &exponent);  // a = f * 2^exponent, f in [0.5, 1): the unit exponent is exponent - 1
  const int unit = std::max(exponent - 1, kMinNormalExponent);
  // a in steps of 2^(unit - 3): 8..16 for normals (the leading 1 and three mantissa bits), 0..8 below.
  const uint32_t steps = round_half_even(std::ldexp(a, 3 - unit));
  if (exponent - 1 < kMinNormalExponent) return static_cast<uint8_t>(steps);  // subnormal (8: the smallest normal)
  // steps 16 carries into the exponent; below 448 the largest is 0x7E (14 steps of 2^5).
  return static_cast<uint8_t>(static_cast<uint32_t>(unit + kBias) * 8 + (steps - 8));
}

}  // namespace

uint8_t f32_to_e4m3_sat(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value)) return sign | kNaN;
  return sign | magnitude_bits(std::fabs(value));
}

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
    for (uint64_t c = c0; c < c1; ++c) out[c] = f32_to_e4m3_sat(bf16_to_f32(bf16[r * cols + c]) / scale);
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
