// Internal to the codec: a box as the decoder works on it, runs of consecutive elements.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/core/region.h"

namespace dcr {

// A run of consecutive elements of a box: a row, a whole contiguous box, or one of a bundle's.
struct ElementRun {
  uint8_t* data;
  uint64_t elements;
};

// A region's elements as runs: the whole region when contiguous, else each row.
inline void append_runs(const Region& r, std::vector<ElementRun>* runs) {
  if (r.contiguous()) {
    runs->push_back({r.row(0), r.box.elements()});
    return;
  }
  for (uint64_t k = 0; k < r.box.rows; ++k) runs->push_back({r.row(k), r.box.cols});
}

}  // namespace dcr
