#include "dcr/core/region.h"

#include <cstring>

#include "dcr/core/hash.h"

namespace dcr {

Status sub_region(const Region& outer, const Box& inner, Region* out) {
  DCR_REQUIRE(outer.box.contains(inner), Code::invalid_argument,
              inner.describe() + " lies outside the destination " + outer.box.describe());
  *out = outer;
  out->box = inner;
  out->data = outer.data + ((inner.row0 - outer.box.row0) * outer.pitch + (inner.col0 - outer.box.col0)) * outer.width;
  return Status::ok();
}

const uint8_t* dense_bytes(const Region& r, std::vector<uint8_t>* copy) {
  if (r.contiguous()) return r.data;
  copy->resize(r.box.elements() * r.width);
  copy_out(r, copy->data());
  return copy->data();
}

void copy_out(const Region& r, uint8_t* dense) {
  const size_t row_bytes = r.box.cols * r.width;
  if (r.box.empty()) return;  // an empty box may have no memory at all
  if (r.contiguous()) {
    std::memcpy(dense, r.data, r.box.rows * row_bytes);
    return;
  }
  for (uint64_t row = 0; row < r.box.rows; ++row) std::memcpy(dense + row * row_bytes, r.row(row), row_bytes);
}

void copy_in(const Region& r, const uint8_t* dense) {
  const size_t row_bytes = r.box.cols * r.width;
  if (r.box.empty()) return;
  if (r.contiguous()) {
    std::memcpy(r.data, dense, r.box.rows * row_bytes);
    return;
  }
  for (uint64_t row = 0; row < r.box.rows; ++row) std::memcpy(r.row(row), dense + row * row_bytes, row_bytes);
}

uint64_t region_hash(const Region& region) {
  if (region.contiguous()) return hash64(region.data, region.box.elements() * region.width);
  Hasher h;
  for (uint64_t r = 0; r < region.box.rows; ++r) h.update(region.row(r), region.box.cols * region.width);
  return h.digest();
}

}  // namespace dcr
