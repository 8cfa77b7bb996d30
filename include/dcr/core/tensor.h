// Tensor descriptors and the model manifest: the ordered list of canonical tensors. A tensor's id is
// its index in the manifest; canonical coordinates are (tensor id, flat element index).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/dtype.h"

namespace dcr {

struct TensorDesc {
  std::string name;
  DType dtype = DType::bf16;
  std::vector<int64_t> shape;
  bool is_buffer = false;  // a non-parameter buffer (rotary inv_freq, step counters)

  uint64_t numel() const;
  size_t width() const { return dtype_width(dtype); }
  uint64_t nbytes() const { return numel() * width(); }
};

// A name with its control characters (a NUL among them) shown as \xNN, for messages; and whether
// it holds any.
std::string printable(const std::string& name);
bool has_control(const std::string& name);

struct Manifest {
  std::vector<TensorDesc> tensors;

  uint64_t total_bytes() const;
  uint64_t total_elements() const;
  // Hash of names, dtypes and shapes in order: two ranks agree on a manifest iff the hashes match.
  uint64_t hash() const;
  Status validate() const;  // unique non-empty names, positive dims
};

}  // namespace dcr
