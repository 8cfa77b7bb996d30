#include "dcr/layout/piece.h"

namespace dcr {

bool locate(const Holdings& holdings, const Box& b, uint32_t* buffer, uint64_t* offset, uint64_t* pitch) {
  for (const LocalPiece& p : holdings.pieces) {
    if (!p.box.contains(b)) continue;
    *buffer = p.buffer;
    *offset = p.offset + (b.row0 - p.box.row0) * p.pitch + (b.col0 - p.box.col0);
    *pitch = p.pitch;
    return true;
  }
  return false;
}

bool touches(const Holdings& holdings, const Box& b) {
  for (const LocalPiece& p : holdings.pieces) {
    if (!intersect(p.box, b).empty()) return true;
  }
  return false;
}

}  // namespace dcr
