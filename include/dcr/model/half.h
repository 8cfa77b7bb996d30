// IEEE binary16 (f16) conversions, needed by the f16 weight loader and f16 parameters of the change
// model. (They would sit well beside f32_to_bf16_rne in core/dtype.h.)
#pragma once

#include <cstdint>

namespace dcr {

// fp32 -> f16 bits with round-to-nearest-even; overflow gives Inf, NaN stays NaN (quiet, sign kept).
uint16_t f32_to_f16_rne(float value);
// Exact: every f16 value, subnormals included, is an f32 value.
float f16_to_f32(uint16_t bits);

}  // namespace dcr
