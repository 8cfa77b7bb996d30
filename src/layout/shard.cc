#include "dcr/layout/shard.h"

#include <cstring>

namespace dcr {

Shard::Shard(const Manifest& manifest, Holdings holdings) : manifest_(&manifest), holdings_(std::move(holdings)) {
  dtypes_ = holdings_.buffer_dtypes;
  for (DType d : dtypes_) widths_.push_back(static_cast<unsigned>(dtype_width(d)));
  owned_.resize(widths_.size());
  for (size_t b = 0; b < owned_.size(); ++b) {
    owned_[b].assign(holdings_.buffer_elements[b] * widths_[b], 0);
    data_.push_back(owned_[b].data());
    sizes_.push_back(owned_[b].size());
  }
}

Status Shard::attach(const Manifest& manifest, Holdings holdings, const std::vector<BufferMemory>& memory, Shard* out) {
  const size_t count = holdings.buffer_names.size();
  DCR_REQUIRE(memory.size() == count, Code::invalid_argument,
              std::to_string(memory.size()) + " buffers given, the layout has " + std::to_string(count));
  Shard shard;
  shard.manifest_ = &manifest;
  shard.holdings_ = std::move(holdings);
  for (size_t b = 0; b < count; ++b) {
    const std::string& name = shard.holdings_.buffer_names[b];
    const DType dtype = shard.holdings_.buffer_dtypes[b];
    const uint64_t bytes = shard.holdings_.buffer_elements[b] * dtype_width(dtype);
    const BufferMemory& m = memory[b];
    DCR_REQUIRE(m.space == MemorySpace::host, Code::unavailable,
                "buffer '" + name + "' is in device memory; this build applies to host memory only");
    DCR_REQUIRE(m.data != nullptr, Code::invalid_argument, "buffer '" + name + "' has no memory (null)");
    DCR_REQUIRE(m.dtype == dtype, Code::invalid_argument,
                "buffer '" + name + "' is " + dtype_name(m.dtype) + ", the layout holds " + dtype_name(dtype));
    DCR_REQUIRE(m.bytes == bytes, Code::invalid_argument,
                "buffer '" + name + "' has " + std::to_string(m.bytes) + " bytes, the layout needs " + std::to_string(bytes));
    shard.dtypes_.push_back(dtype);
    shard.widths_.push_back(static_cast<unsigned>(dtype_width(dtype)));
    shard.data_.push_back(static_cast<uint8_t*>(m.data));
    shard.sizes_.push_back(bytes);
  }
  *out = std::move(shard);
  return Status::ok();
}

uint64_t Shard::bytes() const {
  uint64_t total = 0;
  for (uint64_t size : sizes_) total += size;
  return total;
}

Status Shard::region(const Box& box, Region* out) {
  uint32_t buffer = 0;
  uint64_t offset = 0, pitch = 0;
  DCR_REQUIRE(locate(holdings_, box, &buffer, &offset, &pitch), Code::invalid_argument,
              box.describe() + " is not held whole by one local piece");
  const unsigned width = widths_[buffer];
  *out = Region{box, width, data_[buffer] + offset * width, pitch};
  return Status::ok();
}

namespace {
// Calls fn(local row pointer, canonical row pointer, row bytes) for every row of every piece.
template <typename Fn>
void for_each_row(const Manifest& manifest, const Holdings& holdings, const std::vector<unsigned>& widths,
                  const std::vector<uint8_t*>& buffers, const TensorBytes& canonical, Fn fn) {
  for (const LocalPiece& p : holdings.pieces) {
    const unsigned w = widths[p.buffer];
    const uint64_t cols = tensor_cols(manifest.tensors[p.box.tensor]);
    for (uint64_t r = 0; r < p.box.rows; ++r) {
      const uint8_t* local = buffers[p.buffer] + (p.offset + r * p.pitch) * w;
      const uint8_t* canon = canonical(p.box.tensor) + ((p.box.row0 + r) * cols + p.box.col0) * w;
      if (!fn(const_cast<uint8_t*>(local), canon, p.box.cols * w, p, r)) return;
    }
  }
}
}  // namespace

void Shard::load(const TensorBytes& canonical) {
  for_each_row(*manifest_, holdings_, widths_, data_, canonical,
               [](uint8_t* local, const uint8_t* canon, size_t bytes, const LocalPiece&, uint64_t) {
                 std::memcpy(local, canon, bytes);
                 return true;
               });
}

bool Shard::matches(const TensorBytes& canonical, std::string* difference) const {
  bool same = true;
  for_each_row(*manifest_, holdings_, widths_, data_, canonical,
               [&](uint8_t* local, const uint8_t* canon, size_t bytes, const LocalPiece& p, uint64_t r) {
                 if (std::memcmp(local, canon, bytes) == 0) return true;
                 same = false;
                 *difference = "buffer '" + holdings_.buffer_names[p.buffer] + "' differs from " + p.box.describe() +
                               " in its row " + std::to_string(p.box.row0 + r);
                 return false;
               });
  return same;
}

Manifest Shard::buffer_manifest() const {
  Manifest m;
  for (size_t b = 0; b < data_.size(); ++b) {
    m.tensors.push_back(TensorDesc{holdings_.buffer_names[b], dtypes_[b],
                                   {static_cast<int64_t>(holdings_.buffer_elements[b])}, false});
  }
  return m;
}

Manifest Shard::shaped_manifest() const {
  Manifest m = buffer_manifest();
  for (size_t b = 0; b < m.tensors.size() && b < holdings_.buffer_shapes.size(); ++b) {
    m.tensors[b].shape = holdings_.buffer_shapes[b];
  }
  return m;
}

Status Shard::with_buffers(const std::function<Status(const CanonicalBits&)>& use) const {
  if (owned_.size() == data_.size()) return use(owned_);
  CanonicalBits copy(data_.size());
  for (size_t b = 0; b < data_.size(); ++b) copy[b].assign(data_[b], data_[b] + sizes_[b]);
  return use(copy);
}

Status Shard::restore(const Manifest& manifest, const CanonicalBits& buffers) {
  DCR_REQUIRE(manifest.tensors.size() == data_.size() && buffers.size() == data_.size(), Code::corrupt,
              "snapshot holds " + std::to_string(manifest.tensors.size()) + " buffers, this rank has " +
                  std::to_string(data_.size()));
  for (size_t b = 0; b < data_.size(); ++b) {
    DCR_REQUIRE(manifest.tensors[b].name == holdings_.buffer_names[b] && buffers[b].size() == sizes_[b], Code::corrupt,
                "snapshot buffer '" + manifest.tensors[b].name + "' does not match local buffer '" +
                    holdings_.buffer_names[b] + "'");
  }
  for (size_t b = 0; b < data_.size(); ++b) std::memcpy(data_[b], buffers[b].data(), sizes_[b]);
  return Status::ok();
}

void Shard::copy_from(const Shard& other) {
  for (size_t b = 0; b < data_.size(); ++b) std::memcpy(data_[b], other.data_[b], sizes_[b]);
}

}  // namespace dcr
