// Element types dcr moves. The codec sees only element widths; the dtype decides the value order
// used by ordered deltas (sign-magnitude for floats, two's complement for integers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "dcr/core/status.h"

namespace dcr {

enum class DType : uint8_t { bf16, f16, f32, f64, f8_e4m3, f8_e5m2, i32, i64, u8 };

size_t dtype_width(DType dtype);
const char* dtype_name(DType dtype);
bool dtype_is_float(DType dtype);
// The lowest bit of a float's exponent field (bf16 7, f16 10, f32 23, f64 52, f8 3 or 2); -1 for
// integers.
int exponent_shift(DType dtype);
Status parse_dtype(const std::string& name, DType* out);

// fp32 -> bf16 bits with round-to-nearest-even; NaN stays NaN (quiet, sign kept).
uint16_t f32_to_bf16_rne(float value);
// Exact (inline: the block-FP8 quantizer converts every element).
inline float bf16_to_f32(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

}  // namespace dcr
