#include "dcr/layout/shard.h"

#include <cstring>

namespace dcr {

Shard::Shard(const Manifest& manifest, Holdings holdings) : manifest_(&manifest), holdings_(std::move(holdings)) {
  dtypes_ = holdings_.buffer_dtypes;
  for (DType d : dtypes_) widths_.push_back(static_cast<unsigned>(dtype_width(d)));
  buffers_.resize(widths_.size());
  for (size_t b = 0; b < buffers_.size(); ++b) buffers_[b].assign(holdings_.buffer_elements[b] * widths_[b], 0);
}

uint64_t Shard::bytes() const {
  uint64_t total = 0;
  for (const auto& b : buffers_) total += b.size();
  return total;
}

Status Shard::region(const Box& box, Region* out) {
  uint32_t buffer = 0;
  uint64_t offset = 0, pitch = 0;
  DCR_REQUIRE(locate(holdings_, box, &buffer, &offset, &pitch), Code::invalid_argument,
              box.describe() + " is not held whole by one local piece");
  const unsigned width = widths_[buffer];
  *out = Region{box, width, buffers_[buffer].data() + offset * width, pitch};
  return Status::ok();
}

namespace {
// Calls fn(local row pointer, canonical row pointer, row bytes) for every row of every piece.
template <typename Fn>
void for_each_row(const Manifest& manifest, const Holdings& holdings, const std::vector<unsigned>& widths,
                  const std::vector<std::vector<uint8_t>>& buffers, const TensorBytes& canonical, Fn fn) {
  for (const LocalPiece& p : holdings.pieces) {
    const unsigned w = widths[p.buffer];
    const uint64_t cols = tensor_cols(manifest.tensors[p.box.tensor]);
    for (uint64_t r = 0; r < p.box.rows; ++r) {
      const uint8_t* local = buffers[p.buffer].data() + (p.offset + r * p.pitch) * w;
      const uint8_t* canon = canonical(p.box.tensor) + ((p.box.row0 + r) * cols + p.box.col0) * w;
      if (!fn(const_cast<uint8_t*>(local), canon, p.box.cols * w, p, r)) return;
    }
  }
}
}  // namespace

void Shard::load(const TensorBytes& canonical) {
  for_each_row(*manifest_, holdings_, widths_, buffers_, canonical,
               [](uint8_t* local, const uint8_t* canon, size_t bytes, const LocalPiece&, uint64_t) {
                 std::memcpy(local, canon, bytes);
                 return true;
               });
}

bool Shard::matches(const TensorBytes& canonical, std::string* difference) const {
  bool same = true;
  for_each_row(*manifest_, holdings_, widths_, buffers_, canonical,
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
  for (size_t b = 0; b < buffers_.size(); ++b) {
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

Status Shard::restore(const Manifest& manifest, CanonicalBits buffers) {
  DCR_REQUIRE(manifest.tensors.size() == buffers_.size() && buffers.size() == buffers_.size(), Code::corrupt,
              "snapshot holds " + std::to_string(manifest.tensors.size()) + " buffers, this rank has " +
                  std::to_string(buffers_.size()));
  for (size_t b = 0; b < buffers_.size(); ++b) {
    DCR_REQUIRE(manifest.tensors[b].name == holdings_.buffer_names[b] && buffers[b].size() == buffers_[b].size(),
                Code::corrupt,
                "snapshot buffer '" + manifest.tensors[b].name + "' does not match local buffer '" +
                    holdings_.buffer_names[b] + "'");
  }
  buffers_ = std::move(buffers);
  return Status::ok();
}

void Shard::copy_from(const Shard& other) {
  for (size_t b = 0; b < buffers_.size(); ++b) std::memcpy(buffers_[b].data(), other.buffers_[b].data(), buffers_[b].size());
}

}  // namespace dcr
