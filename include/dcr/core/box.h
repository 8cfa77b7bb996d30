// Canonical coordinates. Every tensor is viewed as a row-major matrix [rows, cols] with
// cols = its last dimension (1-D tensors and scalars are one row). A Box is a rectangle of that
// matrix; a canonical flat range that stays inside one row, or covers whole rows, is a Box too.
// Frames, trainer shards, serving shards and routing are all expressed as boxes, so placing,
// routing and cutting are box intersections.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "dcr/core/tensor.h"

namespace dcr {

struct Box {
  uint32_t tensor = 0;
  uint64_t row0 = 0, rows = 0;  // rows [row0, row0 + rows)
  uint64_t col0 = 0, cols = 0;  // columns [col0, col0 + cols)

  uint64_t elements() const { return rows * cols; }
  bool empty() const { return rows == 0 || cols == 0; }
  bool contains(const Box& inner) const {
    return inner.tensor == tensor && inner.row0 >= row0 && inner.row0 + inner.rows <= row0 + rows &&
           inner.col0 >= col0 && inner.col0 + inner.cols <= col0 + cols;
  }
  bool operator==(const Box& o) const {
    return tensor == o.tensor && row0 == o.row0 && rows == o.rows && col0 == o.col0 && cols == o.cols;
  }
  std::string describe() const {
    return "tensor " + std::to_string(tensor) + " rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) +
           ") cols [" + std::to_string(col0) + ", " + std::to_string(col0 + cols) + ")";
  }
};

// The matrix view of a tensor: [numel / last dim, last dim]; scalars are [1, 1].
inline uint64_t tensor_cols(const TensorDesc& t) { return t.shape.empty() ? 1 : static_cast<uint64_t>(t.shape.back()); }
inline uint64_t tensor_rows(const TensorDesc& t) { return t.numel() / tensor_cols(t); }
inline Box whole_tensor(uint32_t id, const TensorDesc& t) { return Box{id, 0, tensor_rows(t), 0, tensor_cols(t)}; }

// The overlap of two boxes (empty when they do not meet or lie in different tensors).
inline Box intersect(const Box& a, const Box& b) {
  Box out{a.tensor, 0, 0, 0, 0};
  if (a.tensor != b.tensor) return out;
  const uint64_t r0 = std::max(a.row0, b.row0), r1 = std::min(a.row0 + a.rows, b.row0 + b.rows);
  const uint64_t c0 = std::max(a.col0, b.col0), c1 = std::min(a.col0 + a.cols, b.col0 + b.cols);
  if (r0 >= r1 || c0 >= c1) return out;
  return Box{a.tensor, r0, r1 - r0, c0, c1 - c0};
}

}  // namespace dcr
