#include "dcr/layout/shard.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "dcr/layout/fp8_block.h"

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

Shard Shard::view(const Manifest& manifest, const Holdings& holdings, const TensorBytes& canonical) {
  Shard shard;
  shard.manifest_ = &manifest;
  std::map<uint32_t, uint32_t> buffer_of;  // tensor -> its buffer here
  for (const LocalPiece& p : holdings.pieces) {
    const TensorDesc& t = manifest.tensors[p.box.tensor];
    const auto it = buffer_of.emplace(p.box.tensor, static_cast<uint32_t>(buffer_of.size())).first;
    if (it->second == shard.data_.size()) {
      shard.holdings_.buffer_names.push_back(t.name);
      shard.holdings_.buffer_elements.push_back(t.numel());
      shard.holdings_.buffer_shapes.push_back(t.shape);
      shard.holdings_.buffer_dtypes.push_back(t.dtype);
      shard.dtypes_.push_back(t.dtype);
      shard.widths_.push_back(static_cast<unsigned>(t.width()));
      shard.data_.push_back(const_cast<uint8_t*>(canonical(p.box.tensor)));
      shard.sizes_.push_back(t.nbytes());
    }
    const uint64_t cols = tensor_cols(t);
    shard.holdings_.pieces.push_back(LocalPiece{p.box, it->second, p.box.row0 * cols + p.box.col0, cols});
  }
  return shard;
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

BoxBytes rows_of(const Manifest& manifest, const TensorBytes& canonical) {
  return [&manifest, canonical](const Box& box, uint8_t* dst, uint64_t pitch) {
    const size_t w = manifest.tensors[box.tensor].width();
    const uint64_t cols = tensor_cols(manifest.tensors[box.tensor]);
    const uint8_t* src = canonical(box.tensor) + (box.row0 * cols + box.col0) * w;
    for (uint64_t r = 0; r < box.rows; ++r) std::memcpy(dst + r * pitch * w, src + r * cols * w, box.cols * w);
    return Status::ok();
  };
}

Status Shard::load(const BoxBytes& canonical) {
  for (const LocalPiece& p : holdings_.pieces) {
    DCR_TRY(canonical(p.box, data_[p.buffer] + p.offset * widths_[p.buffer], p.pitch));
  }
  return Status::ok();
}

Status Shard::matches(const BoxBytes& canonical, bool* same, std::string* difference) const {
  // A band of rows at a time, whole 128-row blocks (a quantized box must lie on whole blocks).
  constexpr uint64_t kBandBytes = 4u << 20, kBlockRows = kFp8Block;
  std::vector<uint8_t> expected;
  *same = true;
  for (const LocalPiece& p : holdings_.pieces) {
    const unsigned w = widths_[p.buffer];
    const uint64_t row_bytes = p.box.cols * w;
    const uint64_t band = std::max<uint64_t>(kBlockRows, kBandBytes / row_bytes / kBlockRows * kBlockRows);
    for (uint64_t r0 = 0; r0 < p.box.rows; r0 += band) {
      Box part = p.box;
      part.row0 += r0;
      part.rows = std::min(band, p.box.rows - r0);
      expected.resize(part.rows * row_bytes);
      DCR_TRY(canonical(part, expected.data(), part.cols));
      for (uint64_t r = 0; r < part.rows; ++r) {
        const uint8_t* local = data_[p.buffer] + (p.offset + (r0 + r) * p.pitch) * w;
        if (std::memcmp(local, expected.data() + r * row_bytes, row_bytes) == 0) continue;
        *same = false;
        *difference = "buffer '" + holdings_.buffer_names[p.buffer] + "' differs from " + p.box.describe() +
                      " in its row " + std::to_string(part.row0 + r);
        return Status::ok();
      }
    }
  }
  return Status::ok();
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

namespace {

bool same_layout(const Holdings& a, const Holdings& b) {
  if (a.buffer_elements != b.buffer_elements || a.pieces.size() != b.pieces.size()) return false;
  for (size_t i = 0; i < a.pieces.size(); ++i) {
    const LocalPiece &p = a.pieces[i], &q = b.pieces[i];
    if (!(p.box == q.box) || p.buffer != q.buffer || p.offset != q.offset || p.pitch != q.pitch) return false;
  }
  return true;
}

}  // namespace

void Shard::copy_from(const Shard& other) {
  if (same_layout(holdings_, other.holdings_)) {
    for (size_t b = 0; b < data_.size(); ++b) std::memcpy(data_[b], other.data_[b], sizes_[b]);
    return;
  }
  std::vector<Box> boxes;
  for (const LocalPiece& p : holdings_.pieces) boxes.push_back(p.box);
  copy_from(other, boxes);
}

void Shard::copy_from(const Shard& other, const std::vector<Box>& boxes) {
  for (const Box& box : boxes) {
    uint32_t to = 0, from = 0;
    uint64_t to_offset = 0, to_pitch = 0, from_offset = 0, from_pitch = 0;
    if (!locate(holdings_, box, &to, &to_offset, &to_pitch)) continue;
    if (!locate(other.holdings_, box, &from, &from_offset, &from_pitch)) continue;  // not held there: nothing to copy
    const unsigned w = widths_[to];
    for (uint64_t r = 0; r < box.rows; ++r) {
      std::memcpy(data_[to] + (to_offset + r * to_pitch) * w, other.data_[from] + (from_offset + r * from_pitch) * w,
                  box.cols * w);
    }
  }
}

}  // namespace dcr
