// Where a training rank keeps the canonical model: tensor parallelism (TP) first, then FSDP flat
// sharding of each TP part.
#pragma once

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/piece.h"

namespace dcr {

// fsdp * tp training ranks; rank = tp_rank * fsdp + fsdp_rank.
struct TrainingLayout {
  int fsdp = 1;
  int tp = 1;
};

// The holdings of training rank `rank`. Each tensor is first cut into its TP part (see tp_split.h),
// a matrix stored row-major and contiguous; its flat elements are padded to a multiple of fsdp and
// fsdp rank i holds flat [i*L, (i+1)*L) in its own buffer of L elements, named "<tensor>#fsdp<i>"
// (with tp > 1: "<tensor>#tp<t>#fsdp<i>"). The held range becomes at most 3 pieces in canonical
// coordinates (partial first row, whole rows, partial last row) with pitch = the part's columns.
// Replicated tensors (norms, buffers) are kept by every TP rank, but only TP rank 0 lists pieces for
// them, so every canonical element has exactly one owning trainer rank: the one that sends it.
// A rank whose range lies wholly in the padding, or that does not own a replicated tensor, keeps the
// buffer but lists no pieces for it.
// invalid_argument for fsdp or tp < 1, a rank outside the world, or a TP split that does not divide.
Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out);

}  // namespace dcr
