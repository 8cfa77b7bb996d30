// Where a training rank keeps the canonical model: pipeline stages (PP) hold layer ranges, tensor
// parallelism (TP) cuts each tensor of a stage, then FSDP flat-shards each TP part; with expert
// parallelism, each expert lives on one expert group; data-parallel replicas (DP) each hold all of
// that again.
#pragma once

#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/piece.h"

namespace dcr {

// pp * dp * tp * fsdp training ranks; rank = ((pp_rank * dp + dp_rank) * tp + tp_rank) * fsdp +
// fsdp_rank: FSDP innermost, then TP, then the replicas, stages outermost (Megatron's order with
// FSDP inside TP). The tp * fsdp ranks of one stage of one replica are its "stage group".
// - Pipeline stages: stage s holds layers [first(s), first(s + 1)): an even split of the model's
//   layers (the family's "layer" pattern; they must divide by pp), or `pp_layers[s]` layers each.
//   Tensors outside the layers go to the first stage, or the last where their rule says "stage":
//   "last" (the final norm, the output layer). Tied embeddings (config.json tie_word_embeddings)
//   are held by the last stage as well, which lists no pieces for them: the first stage owns them.
// - With ep > 1 (ep divides tp * fsdp), expert tensors are not TP-split: each stage group is cut
//   into ep expert groups of consecutive ranks, expert e lives on group g by linear placement (as
//   serving_layout.h), flat-sharded over its ranks.
// - Data-parallel replicas hold the same bits in the same buffers; which replica sends each part is
//   the plan's choice (refit/plan.h), so the holdings of every replica are alike.
struct TrainingLayout {
  int fsdp = 1;
  int tp = 1;
  int ep = 1;
  const ModelRules* rules = nullptr;
  int pp = 1;
  int dp = 1;
  std::vector<int> pp_layers = {};  // layers per stage (empty: an even split)

  int world() const { return fsdp * tp * pp * dp; }
};

// A training rank's place in the layout.
struct TrainingCoords {
  int pp = 0, dp = 0, tp = 0, fsdp = 0;
};
TrainingCoords training_coords(const TrainingLayout& layout, int rank);

// The first layer of each stage, and the layer count after them (pp + 1 entries), from the
// model's layers (rules): invalid_argument naming the counts when pp > 1 and the family has no
// "layer" pattern, the layers do not divide evenly, or pp_layers does not list pp counts of at
// least one that add up to the layers.
Status stage_bounds(const TrainingLayout& layout, std::vector<int64_t>* bounds);

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
// A rank lists no buffer for a tensor its stage (or expert group) does not hold.
// invalid_argument for fsdp, tp, pp, dp or ep < 1, ep not dividing tp * fsdp, a rank outside the
// world, a TP split that does not divide, a stage split that does not fit (stage_bounds), or an
// unmatched tensor of 2+ dims at tp > 1.
Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out);

}  // namespace dcr
