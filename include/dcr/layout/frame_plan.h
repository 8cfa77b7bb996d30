// Cutting a trainer's holdings into frames (canonical boxes) that every serving rank can apply whole,
// so a frame's base/target hashes cover exactly what each receiver writes.
#pragma once

#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/piece.h"

namespace dcr {

// Cuts the pieces of `trainer` into frames such that each frame lies inside one trainer piece and,
// for every serving rank, either inside one of its pieces or apart from all of them; each frame has at
// most max_elements elements. Frames are cut only where a serving piece edge crosses them (rows
// first), then by size: whole rows while a row fits, else single rows cut into column runs. Sorted by
// (tensor, row0, col0). invalid_argument for max_elements 0 or a piece outside its tensor.
Status plan_frames(const Manifest& manifest, const Holdings& trainer, const std::vector<Holdings>& serving_ranks,
                   uint64_t max_elements, std::vector<Box>* frames);

// The serving ranks whose holdings share an element with `frame`, ascending.
std::vector<int> receivers(const Box& frame, const std::vector<Holdings>& serving_ranks);

}  // namespace dcr
