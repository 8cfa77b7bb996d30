// Where a rollout (serving) rank keeps the canonical model: its own tensor-parallel split, with
// q/k/v and gate/up optionally fused into one buffer each, as serving runtimes load them.
#pragma once

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/piece.h"

namespace dcr {

// replicas * tp rollout ranks; rollout rank r has tp rank r % tp.
struct ServingLayout {
  int tp = 1;
  bool fuse_qkv = true;
  bool fuse_gate_up = true;
};

// The holdings of rollout rank `rollout_rank`. Split tensors hold their TP part (see tp_split.h),
// replicated ones the whole tensor, each in a buffer named after the tensor with pitch = part columns.
// Fused: "<prefix>attn.qkv" holds the rows [q part; k part; v part] of "<prefix>attn.{q,k,v}.weight"
// and "<prefix>mlp.gate_up" holds [gate part; up part], pitch = the shared input width; a fused
// buffer takes the place of its first member in manifest order, and a group fuses only when all its
// members exist. invalid_argument for tp < 1, a negative rank, a TP split that does not divide, or
// fused members of different widths.
Status serving_holdings(const Manifest& manifest, const ServingLayout& layout, int rollout_rank, Holdings* out);

}  // namespace dcr
