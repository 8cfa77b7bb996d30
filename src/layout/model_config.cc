#include "dcr/layout/model_config.h"

#include <set>

namespace dcr {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxHeads = int64_t{1} << 20;  // heads, KV heads, head_dim, experts: products stay in range

// The count `key` of config.json: *present false when absent (or null), else a whole number in
// [low, high] (0 <= low).
Status count_field(const json& config, const std::string& key, int64_t low, int64_t high, int64_t* out,
                   bool* present) {
  *present = false;
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return Status::ok();
  const std::string field = "\"" + key + "\"";
  DCR_REQUIRE(it->is_number_integer(), Code::invalid_argument,
              field + " must be a whole number, got " + json_brief(*it));
  const bool negative = !it->is_number_unsigned() && it->get<int64_t>() < 0;
  const uint64_t value = negative ? 0 : it->get<uint64_t>();
  DCR_REQUIRE(!negative && value >= static_cast<uint64_t>(low) && value <= static_cast<uint64_t>(high), Code::invalid_argument,
              field + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + json_brief(*it));
  *out = it->get<int64_t>();
  *present = true;
  return Status::ok();
}

Status count_field(const json& config, const std::string& key, int64_t low, int64_t high, int64_t* out) {
  bool present = false;
  return count_field(config, key, low, high, out, &present);
}

std::string shape_text(const TensorDesc& t) {
  std::string text = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) text += (d ? ", " : "") + std::to_string(t.shape[d]);
  return text + "]";
}

// A tensor's rule's "shape": each named dimension equals its config.json count.
Status check_shape(const json& config, const TensorDesc& t, const TensorRule& rule, const ModelRules& rules) {
  if (rule.shape.size() != t.shape.size()) return Status::ok();
  for (size_t d = 0; d < rule.shape.size(); ++d) {
    if (rule.shape[d].empty()) continue;
    int64_t want = 0;
    bool present = false;
    DCR_TRY(count_field(config, rule.shape[d], 1, kMaxConfigCount, &want, &present));
    DCR_REQUIRE(!present || want == t.shape[d], Code::invalid_argument,
                "config.json gives " + rule.shape[d] + " " + std::to_string(want) + ", but tensor '" + t.name + "' is " +
                    shape_text(t) + ", whose dimension " + std::to_string(d) + " is " + rule.shape[d] +
                    " (rule \"" + rule.pattern + "\" in '" + rules.file + "'): config.json and the weights disagree; "
                    "correct whichever is wrong");
  }
  return Status::ok();
}

// The rows of q (heads x head_dim) and of k and v (KV heads x head_dim).
Status check_heads(const TensorDesc& t, const TensorRule& rule, const ModelRules& rules) {
  const ModelDims& d = rules.dims;
  if (rule.kind != SplitKind::qkv || d.heads == 0 || d.head_dim == 0 || t.shape.empty()) return Status::ok();
  const bool query = rule.member == 0;
  const int64_t heads = query ? d.heads : d.kv_heads;
  DCR_REQUIRE(t.shape[0] == heads * d.head_dim, Code::invalid_argument,
              "tensor '" + t.name + "' has " + std::to_string(t.shape[0]) + " rows, but config.json gives " +
                  std::to_string(heads) + (query ? " attention heads" : " KV heads") + " of head_dim " +
                  std::to_string(d.head_dim) + " = " + std::to_string(heads * d.head_dim) +
                  ": config.json and the weights disagree (or rule \"" + rule.pattern + "\" in '" + rules.file +
                  "' lists its members out of order: query, key, value)");
  return Status::ok();
}

// The family's layer indices are exactly 0 .. num_hidden_layers - 1.
Status check_layers(const json& config, const Manifest& manifest, const ModelRules& rules) {
  int64_t layers = 0;
  bool present = false;
  DCR_TRY(count_field(config, "num_hidden_layers", 1, kMaxHeads, &layers, &present));
  if (!present || !rules.has_layers) return Status::ok();
  std::set<int64_t> seen;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    const int64_t layer = rules.tensors[id].layer;
    DCR_REQUIRE(layer < layers, Code::invalid_argument,
                "tensor '" + manifest.tensors[id].name + "' is in layer " + std::to_string(layer) +
                    ", but config.json gives num_hidden_layers " + std::to_string(layers) + " (family file '" +
                    rules.file + "' finds layers by \"layer\"): config.json and the weights disagree");
    if (layer >= 0) seen.insert(layer);
  }
  for (int64_t l = 0; l < layers; ++l) {
    DCR_REQUIRE(seen.count(l), Code::invalid_argument,
                "config.json gives num_hidden_layers " + std::to_string(layers) + ", but the checkpoint has no tensor of layer " +
                    std::to_string(l) + " (family file '" + rules.file + "' finds layers by \"layer\"): config.json and the "
                    "weights disagree");
  }
  return Status::ok();
}

// The config.json fields a serving layout depends on.
constexpr const char* kLayoutKeys[] = {
    "model_type",        "architectures",        "num_attention_heads", "num_key_value_heads", "head_dim",
    "hidden_size",       "intermediate_size",    "moe_intermediate_size", "num_hidden_layers", "vocab_size",
    "num_local_experts", "num_experts",          "tie_word_embeddings"};

}  // namespace

std::string json_brief(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  const std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 80) + "..." : text;
}

Status model_dims(const json& config, ModelDims* out) {
  DCR_REQUIRE(config.is_object(), Code::invalid_argument, "config.json is not a JSON object");
  ModelDims d;
  int64_t hidden = 0;
  bool kv_given = false;
  DCR_TRY(count_field(config, "num_attention_heads", 1, kMaxHeads, &d.heads));
  DCR_TRY(count_field(config, "num_key_value_heads", 1, kMaxHeads, &d.kv_heads, &kv_given));
  if (!kv_given) d.kv_heads = d.heads;
  DCR_TRY(count_field(config, "head_dim", 1, kMaxHeads, &d.head_dim));
  DCR_TRY(count_field(config, "hidden_size", 1, kMaxConfigCount, &hidden));
  if (d.head_dim == 0 && d.heads > 0) d.head_dim = hidden / d.heads;
  DCR_TRY(count_field(config, "num_local_experts", 0, kMaxHeads, &d.experts));
  if (d.experts == 0) DCR_TRY(count_field(config, "num_experts", 0, kMaxHeads, &d.experts));
  const auto tied = config.find("tie_word_embeddings");
  DCR_REQUIRE(tied == config.end() || tied->is_boolean() || tied->is_null(), Code::invalid_argument,
              "\"tie_word_embeddings\" must be true or false, got " + json_brief(*tied));
  d.tied = tied != config.end() && tied->is_boolean() && tied->get<bool>();
  *out = d;
  return Status::ok();
}

Status check_config(const json& config, const Manifest& manifest, const ModelRules& rules) {
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    const TensorRule& rule = rules.tensors[id];
    DCR_TRY(check_shape(config, manifest.tensors[id], rule, rules).with_context("config.json"));
    DCR_TRY(check_heads(manifest.tensors[id], rule, rules).with_context("config.json"));
  }
  return check_layers(config, manifest, rules).with_context("config.json");
}

std::string layout_difference(const json& before, const json& after) {
  std::string text;
  for (const char* key : kLayoutKeys) {
    const json a = before.is_object() ? before.value(key, json()) : json(), b = after.is_object() ? after.value(key, json()) : json();
    if (a == b) continue;
    text += (text.empty() ? "" : "; ") + std::string(key) + " " + (a.is_null() ? "(absent)" : json_brief(a)) + " -> " +
            (b.is_null() ? "(absent)" : json_brief(b));
  }
  return text;
}

}  // namespace dcr
