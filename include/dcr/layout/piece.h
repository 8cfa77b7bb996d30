// Holdings: which canonical boxes a rank keeps in which of its local buffers, and where. Trainer
// shards, serving shards and fused serving buffers are all described this way, so placing a
// canonical box into local memory is a lookup of the piece that contains it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/box.h"

namespace dcr {

// Canonical box `box` lives in local buffer `buffer`: element (box.row0, box.col0) sits at element
// offset `offset`, and consecutive box rows are `pitch` elements apart.
struct LocalPiece {
  Box box;
  uint32_t buffer = 0;
  uint64_t offset = 0;
  uint64_t pitch = 0;
};

// A rank's local buffers (names, sizes in elements with padding, shapes) and the pieces they hold.
// The pieces of one rank never overlap.
struct Holdings {
  std::vector<std::string> buffer_names;
  std::vector<uint64_t> buffer_elements;
  std::vector<std::vector<int64_t>> buffer_shapes;  // the serving runtime's parameter shapes
  std::vector<DType> buffer_dtypes;
  std::vector<LocalPiece> pieces;
};

// When `b` lies entirely inside one piece: its local address (buffer, offset of its first element,
// row pitch) and true; false otherwise.
bool locate(const Holdings& holdings, const Box& b, uint32_t* buffer, uint64_t* offset, uint64_t* pitch);

// Whether any piece shares at least one element with `b`.
bool touches(const Holdings& holdings, const Box& b);

}  // namespace dcr
