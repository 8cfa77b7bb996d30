// Sizes of tensors whose shapes come from files, checked before any buffer is sized from them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dcr/core/tensor.h"

namespace dcr {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// t.nbytes(), or Code::corrupt when a dimension is not positive or the product overflows 64 bits.
inline Status checked_nbytes(const TensorDesc& t, uint64_t* bytes) {
  uint64_t n = t.width();
  for (int64_t d : t.shape) {
    DCR_REQUIRE(d > 0 && n <= std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d), Code::corrupt,
                "shape " + shape_text(t.shape) + " is not a valid size for " + dtype_name(t.dtype));
    n *= static_cast<uint64_t>(d);
  }
  *bytes = n;
  return Status::ok();
}

}  // namespace dcr
