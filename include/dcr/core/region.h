// Where a canonical box lives in memory: element (box.row0, box.col0) at `data`, consecutive rows
// of the box `pitch` elements apart. A trainer's shard, a serving buffer (fused or split) and a
// whole canonical tensor are all regions; the codec reads and writes boxes through them.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/core/box.h"
#include "dcr/core/status.h"

namespace dcr {

struct Region {
  Box box;
  unsigned width = 2;
  uint8_t* data = nullptr;
  uint64_t pitch = 0;  // elements between consecutive rows (>= box.cols)

  bool contiguous() const { return box.rows <= 1 || pitch == box.cols; }
  uint8_t* row(uint64_t r) const { return data + r * pitch * width; }
};

// A box stored densely (row-major, pitch = cols) at `data`.
inline Region dense_region(const Box& box, unsigned width, const void* data) {
  return Region{box, width, static_cast<uint8_t*>(const_cast<void*>(data)), box.cols};
}

// The part of `outer` holding `inner`; invalid_argument naming both when `inner` is not inside.
Status sub_region(const Region& outer, const Box& inner, Region* out);

// The region's elements densely, row-major: its own memory when contiguous, else a copy in `copy`.
const uint8_t* dense_bytes(const Region& region, std::vector<uint8_t>* copy);

// Copies the region's elements out to / in from a dense row-major array.
void copy_out(const Region& region, uint8_t* dense);
void copy_in(const Region& region, const uint8_t* dense);

// hash64 of the region's elements in canonical (row-major) order.
uint64_t region_hash(const Region& region);

}  // namespace dcr
