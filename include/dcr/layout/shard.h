// A rank's local copy of the model in its own layout: the buffers its Holdings describe, and the
// moves between them and canonical tensors (projection = what a loader does).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcr/core/region.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/piece.h"

namespace dcr {

using CanonicalBits = std::vector<std::vector<uint8_t>>;  // one row-major byte array per tensor
// Where the canonical bytes of tensor t start (read in place: no copy of the model).
using TensorBytes = std::function<const uint8_t*(uint32_t tensor)>;

class Shard {
 public:
  Shard() = default;
  Shard(const Manifest& manifest, Holdings holdings);

  const Holdings& holdings() const { return holdings_; }
  uint64_t bytes() const;

  // Where `box` lives here; invalid_argument when no single piece holds all of it.
  Status region(const Box& box, Region* out);

  // Copies every piece from the canonical tensors into the local buffers.
  void load(const TensorBytes& canonical);
  // Whether every piece equals the canonical tensors byte for byte; names the first difference.
  bool matches(const TensorBytes& canonical, std::string* difference) const;
  // Copies all buffers from another shard of the same holdings (a baseline promotion).
  void copy_from(const Shard& other);

  // The local buffers as a checkpoint: one 1-D "tensor" per buffer (named after it, typed like the
  // tensors it holds), for snapshots; and back, checking every buffer's name and size.
  Manifest buffer_manifest() const;
  // The same with each buffer's shape from the holdings (the serving runtime's parameter shapes).
  Manifest shaped_manifest() const;
  const std::vector<std::vector<uint8_t>>& buffers() const { return buffers_; }
  Status restore(const Manifest& manifest, CanonicalBits buffers);

 private:
  const Manifest* manifest_ = nullptr;
  Holdings holdings_;
  std::vector<DType> dtypes_;     // element type of each buffer
  std::vector<unsigned> widths_;  // element width of each buffer
  std::vector<std::vector<uint8_t>> buffers_;
};

}  // namespace dcr
