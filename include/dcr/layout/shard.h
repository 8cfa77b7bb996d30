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
// Writes the canonical bits of `box` to `dst` row by row, consecutive rows `pitch` elements apart
// (a model computed box by box, such as a quantized one: serve_quant.h).
using BoxBytes = std::function<Status(const Box& box, uint8_t* dst, uint64_t pitch)>;
// Rows copied from whole canonical tensors of `manifest` (which must outlive the result).
BoxBytes rows_of(const Manifest& manifest, const TensorBytes& canonical);

// Where a caller's buffer lives. Host memory is applied to by the CPU codec; device memory is where
// the CUDA kernels (cuda/) plug in, and is refused until they do.
enum class MemorySpace : uint8_t { host, device };

// One buffer of the caller's: dense (row-major, no padding), `bytes` long, of element type `dtype`.
struct BufferMemory {
  void* data = nullptr;
  uint64_t bytes = 0;
  DType dtype = DType::bf16;
  MemorySpace space = MemorySpace::host;
};

class Shard {
 public:
  Shard() = default;
  // Owns its buffers (zeroed).
  Shard(const Manifest& manifest, Holdings holdings);
  // On the caller's memory, one BufferMemory per holdings buffer, which the caller keeps alive and
  // does not move while the shard is used. invalid_argument naming the buffer whose count, size or
  // dtype does not match, or a null pointer; unavailable for device memory.
  static Status attach(const Manifest& manifest, Holdings holdings, const std::vector<BufferMemory>& memory,
                       Shard* out);

  // The canonical tensors where they already are (a checkpoint's mapped pages, a model in memory):
  // region(box) of any box inside a piece of `holdings` points into its tensor (pitch: the
  // tensor's columns). Read only, nothing copied; the tensors must stay where they are while the
  // view is used. A trainer sends from such a view and keeps only its baseline.
  static Shard view(const Manifest& manifest, const Holdings& holdings, const TensorBytes& canonical);

  const Holdings& holdings() const { return holdings_; }
  uint64_t bytes() const;

  // Where `box` lives here; invalid_argument when no single piece holds all of it.
  Status region(const Box& box, Region* out);

  // Writes every piece of the canonical model into the local buffers; the first error of `canonical`.
  Status load(const BoxBytes& canonical);
  void load(const TensorBytes& canonical) { (void)load(rows_of(*manifest_, canonical)); }  // cannot fail
  // *same: whether every piece equals the canonical model byte for byte (*difference names the
  // first difference); the first error of `canonical`.
  Status matches(const BoxBytes& canonical, bool* same, std::string* difference) const;
  // Copies every piece from another shard holding them (a baseline promotion): buffer by buffer
  // when both lay them out alike, piece by piece from a view.
  void copy_from(const Shard& other);
  // The same for `boxes` only, each inside one piece of both (a data-parallel replica's share).
  void copy_from(const Shard& other, const std::vector<Box>& boxes);

  // Buffer b's bytes and size (owned or the caller's).
  uint8_t* buffer(size_t b) const { return data_[b]; }
  uint64_t buffer_bytes(size_t b) const { return sizes_[b]; }

  // The local buffers as a checkpoint: one 1-D "tensor" per buffer (named after it, typed like the
  // tensors it holds), for snapshots; and back, checking every buffer's name and size.
  Manifest buffer_manifest() const;
  // The same with each buffer's shape from the holdings (the serving runtime's parameter shapes).
  Manifest shaped_manifest() const;
  // Calls `use` with every buffer as a byte array: owned buffers in place, a caller's copied first.
  Status with_buffers(const std::function<Status(const CanonicalBits&)>& use) const;
  // Copies `buffers` into this shard's buffers (owned or the caller's).
  Status restore(const Manifest& manifest, const CanonicalBits& buffers);

 private:
  const Manifest* manifest_ = nullptr;
  Holdings holdings_;
  std::vector<DType> dtypes_;     // element type of each buffer
  std::vector<unsigned> widths_;  // element width of each buffer
  std::vector<std::vector<uint8_t>> owned_;  // empty for a shard on the caller's memory
  std::vector<uint8_t*> data_;
  std::vector<uint64_t> sizes_;
};

}  // namespace dcr
