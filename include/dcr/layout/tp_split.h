// How tensor-parallel runtimes split canonical tensors, shared by the training and serving layouts.
// Column-parallel linears (attention q, k, v; MLP gate, up) and the vocabulary-parallel embed_tokens
// and lm_head are split by rows (the output dim of an [out, in] weight); row-parallel linears
// (attention o, MLP down) by columns; everything else (norms, buffers) is replicated whole.
#pragma once

#include <string>

#include "dcr/core/box.h"
#include "dcr/core/status.h"

namespace dcr {

enum class TpSplit { replicated, rows, cols };

// The split of a tensor, from its name's last components (so "model.layers.0.attn.q.weight" counts
// as a q weight too). Buffers are always replicated.
TpSplit tp_split(const TensorDesc& tensor);

// The canonical box of tensor `id` that rank `tp_rank` of a tensor-parallel group of `tp` holds:
// the tp_rank-th of `tp` equal row or column bands, or the whole tensor when replicated.
// invalid_argument, naming the tensor and the degree, when the split dimension is not divisible by tp.
Status tp_part(const Manifest& manifest, uint32_t id, int tp, int tp_rank, Box* part);

// Whether `name` is `suffix` or ends with "." + suffix.
bool has_component_suffix(const std::string& name, const std::string& suffix);

}  // namespace dcr
