// Where a rollout (serving) rank keeps the canonical model: vLLM's per-rank layout
// (shared/SERVING_LAYOUT.md), driven by the model family's rules (model_rules.h): fused q/k/v and
// gate/up buffers, KV heads replicated when tp exceeds them, row-parallel biases whole, the
// vocabulary padded and split in equal bands, and experts fused into w13 / w2
// per local expert with expert parallelism.
#pragma once

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/piece.h"

namespace dcr {

// replicas * tp rollout ranks; rollout rank r has tp rank r % tp. Experts: ep groups (ep divides
// tp) of moe_tp = tp / ep ranks; tp rank t is in expert group t / moe_tp at expert tp rank
// t % moe_tp, and group g holds experts [g*(E/ep) + min(g, E%ep), ...) (E/ep, plus one for the
// first E%ep groups), as vLLM's linear placement. ep == tp is vLLM's --enable-expert-parallel.
struct ServingLayout {
  int tp = 1;
  bool fuse = true;  // false: every tensor in a buffer of its own (its part only); experts still fuse
  int ep = 1;
  const ModelRules* rules = nullptr;
};

// The holdings of rollout rank `rollout_rank`: one buffer per serving name, in order of the first
// tensor of each; a fused buffer stacks its members' parts along dim 0 in member order (per local
// expert for expert buffers). buffer_shapes give vLLM's parameter shapes. invalid_argument for
// tp < 1, ep not dividing tp, a negative rank, a split that does not divide, an unmatched tensor
// of 2+ dims at tp > 1, a fused buffer missing a member or holding one twice, or fused members of
// different widths.
Status serving_holdings(const Manifest& manifest, const ServingLayout& layout, int rollout_rank, Holdings* out);

}  // namespace dcr
