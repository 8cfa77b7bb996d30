// Where a training rank keeps the canonical model: tensor parallelism (TP) first, then FSDP flat
// sharding of each TP part; with expert parallelism, each expert lives on one expert group.
#pragma once

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/piece.h"

namespace dcr {

// fsdp * tp training ranks; rank = tp_rank * fsdp + fsdp_rank. With ep > 1 (ep divides the world),
// expert tensors are not TP-split: the world is cut into ep groups of world / ep consecutive ranks,
// expert e lives on group g by linear placement (as serving_layout.h), flat-sharded over its ranks.
struct TrainingLayout {
  int fsdp = 1;
  int tp = 1;
  int ep = 1;
  const ModelRules* rules = nullptr;
};

// The holdings of training rank `rank`. Each tensor is first cut into its TP part (tp_split.h), a
// matrix stored row-major and contiguous; its flat elements are padded to a multiple of fsdp and
// fsdp rank i holds flat [i*L, (i+1)*L) in its own buffer of L elements, named "<tensor>#fsdp<i>"
// (with tp > 1: "<tensor>#tp<t>#fsdp<i>"; experts under ep: "<tensor>#ep<g>#fsdp<i>", on their
// group's ranks only). The held range becomes at most 3 pieces in canonical coordinates (partial
// first row, whole rows, partial last row) with pitch = the part's columns.
// A block-quantized weight (serve_quant.h) and its scale grid are cut in whole block rows instead,
// as FSDP2 shards a parameter on dim 0: fsdp rank i holds block rows [i*B, (i+1)*B) of the part
// (B = ceil(block rows / fsdp)), so every rank quantizes whole blocks of its own.
// Replicated tensors (norms, buffers) are kept by every TP rank, but only TP rank 0 lists pieces for
// them, so every canonical element has exactly one owning trainer rank: the one that sends it.
// A rank whose range lies wholly in the padding, or that does not own a replicated tensor, keeps the
// buffer but lists no pieces for it.
// invalid_argument for fsdp, tp or ep < 1, ep not dividing the world, a rank outside the world, a
// TP split that does not divide, or an unmatched tensor of 2+ dims at tp > 1.
Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out);

}  // namespace dcr
