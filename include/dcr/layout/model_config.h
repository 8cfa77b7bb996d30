// A checkpoint's config.json as the layouts use it: the sizes it gives (every count a whole number
// in range), checked against the weights they describe, and the fields a serving layout depends
// on, which must not change between versions of one job.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"

namespace dcr {

// A JSON value for a message: scalars as they are (cut at 80 characters), containers by kind, so
// no value of an untrusted file is dumped whole.
std::string json_brief(const nlohmann::json& value);

// The largest count config.json may give for any size (2^40).
constexpr int64_t kMaxConfigCount = int64_t{1} << 40;

// Sizes from a parsed config.json. invalid_argument naming the key for a value of the wrong type,
// a fraction, a count out of range, or num_key_value_heads given as 0.
Status model_dims(const nlohmann::json& config, ModelDims* out);

// config.json against the weights `rules` resolved for them: every rule's "shape" (a tensor of as
// many dimensions must have those config.json counts), the rows of each q, k and v (heads or KV
// heads times head_dim), and the layers the family's "layer" pattern finds (exactly 0 ..
// num_hidden_layers - 1). invalid_argument naming the field, the tensor and the family file.
Status check_config(const nlohmann::json& config, const Manifest& manifest, const ModelRules& rules);

// The fields of config.json a serving layout depends on (the model type and architectures, head
// counts, sizes, experts, tied embeddings) that differ from `before` to `after`, as
// "num_key_value_heads 2 -> 4; ..."; empty when none does.
std::string layout_difference(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace dcr
