#include "dcr/model/half.h"

#include <cmath>
#include <cstring>

namespace dcr {

uint16_t f32_to_f16_rne(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536 or Inf
  if (magnitude >= 0x38800000u) {  // f16 normal range: rebias the exponent, round off 13 bits
    uint32_t rebiased = magnitude - 0x38000000u;
    rebiased += 0xfffu + ((rebiased >> 13) & 1u);  // a carry into exponent 31 gives Inf, as it should
    return static_cast<uint16_t>(sign | (rebiased >> 13));
  }
  // Subnormal or zero: the value in units of 2^-24 is exact in f32; nearbyint rounds half to even.
  const float units = std::nearbyint(std::fabs(value) * 16777216.0f);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t wide = exponent == 0x1f ? (sign | 0x7f800000u | (mantissa << 13))
                                         : (sign | ((exponent + 112u) << 23) | (mantissa << 13));
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

}  // namespace dcr
