// Transformer-shaped manifests for tests and benchmarks, in canonical checkpoint order: embeddings,
// then per layer (input norm, attention q/k/v/o, post norm, mlp gate/up/down), final norm, lm_head,
// then the buffers rotary.inv_freq (f32) and step_counter (i64). Parameters are bf16; k and v are
// narrower than d (grouped-query attention) and the MLP width is about 2.7 d.
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"

namespace dcr {

// "tiny" (~2.4 M parameters), "small" (~31 M), "medium" (~125 M), "large" (~495 M).
std::vector<std::string> preset_names();

// Fills *out with the named preset; an unknown name gives invalid_argument listing the valid names.
Status make_preset(const std::string& name, Manifest* out);

}  // namespace dcr
