// Model-family rules as data: which tensor-parallel split each checkpoint tensor takes and which
// serving buffer it is loaded into. A family file (configs/models/<family>.json) maps tensor-name
// patterns to a kind and a serving name; a checkpoint's config.json gives the head counts, the
// vocabulary and whether embeddings are tied. No tensor-name rule lives in C++.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"

namespace dcr {

// How a canonical tensor is split across tensor-parallel ranks ("output" is dim 0, "input" the last).
enum class SplitKind {
  replicated,     // whole on every rank
  column,         // output band (column-parallel linear and its bias)
  row,            // input band (row-parallel linear; its bias is listed as replicated)
  vocab,          // output band of the vocabulary padded to a multiple of vocab_padding; padding rows zero
  qkv,            // q, k or v of one attention: bands of heads, KV heads replicated when tp > KV heads
  fused_column,   // a member of a buffer that stacks the members' output bands (gate_up)
  expert_column,  // a member of an expert's stacked output bands (w13: w1 then w3), per local expert
  expert_row,     // an expert's input band (w2), per local expert
};

// Sizes from the checkpoint's config.json (0 where absent).
struct ModelDims {
  int64_t heads = 0, kv_heads = 0, head_dim = 0, experts = 0;
  bool tied = false;  // tie_word_embeddings
};

// One rule of a family file.
struct FamilyRule {
  std::string pattern;  // ECMAScript regex matched against the whole tensor name
  std::regex regex;
  SplitKind kind = SplitKind::replicated;
  std::string serve;    // serving buffer name, with $1.. from the pattern's groups; empty: the tensor's name
  std::string member;   // member name (with $n), one of `members`
  std::vector<std::string> members;
  std::string expert;   // expert index (with $n) for expert kinds
  bool dropped_if_tied = false;  // not served when the embeddings are tied (lm_head)
  int quantize = -1;             // "quantize": served block-quantized (1) or as it is (0); -1: by kind (serve_quant.h)
};

struct ModelFamily {
  std::string name, file;
  std::vector<std::string> model_types, architectures;  // config.json values that pick this family
  int64_t vocab_padding = 64;
  std::vector<FamilyRule> rules;
};

// What one manifest tensor resolved to.
struct TensorRule {
  bool matched = false;
  SplitKind kind = SplitKind::replicated;
  std::string serve;   // serving buffer (the tensor's own name unless fused)
  int member = 0, members = 1;
  int64_t expert = -1;
  bool dropped = false;  // held by no serving rank (tied lm_head)
  int quantize = -1;     // the rule's "quantize" (-1: not said)
  // Block-quantized serving (serve_quant.h): a weight's parts, at training and at serving, fall on
  // whole `block` x `block` blocks; a scale grid (scales_of: the weight it scales) takes the parts of
  // its weight in block units.
  uint64_t block = 0;
  int64_t scales_of = -1;
};

struct ModelRules {
  std::string family, file;
  int64_t vocab_padding = 64;
  ModelDims dims;
  std::vector<TensorRule> tensors;  // one per manifest tensor
};

// The folder of family files: $DCR_MODELS_DIR, else the source tree's configs/models.
std::string models_dir();

// A family by name (models_dir()/<name>.json) or by path (anything with '/' or ending in .json).
// not_found or invalid_argument naming the file and the bad field.
Status load_model_family(const std::string& name_or_path, ModelFamily* out);

// The family whose model_types holds config.json's "model_type", else whose architectures holds
// one of its "architectures"; not_found listing the families when none does.
Status pick_model_family(const nlohmann::json& config, ModelFamily* out);

// Sizes from a parsed config.json; invalid_argument naming the key for a wrong type or value.
Status model_dims(const nlohmann::json& config, ModelDims* out);

// The first rule matching each tensor (unmatched tensors stay replicated with matched = false).
// invalid_argument naming the tensor for a member outside its rule's members or a bad expert index.
Status resolve_rules(const ModelFamily& family, const ModelDims& dims, const Manifest& manifest, ModelRules* out);

// The rules for a model: the family named (a name or a path), else the one config.json picks, else
// (no config.json: null) dcr's presets' family "dcr"; sizes from config.json.
Status rules_for_model(const std::string& family, const nlohmann::json& config, const Manifest& manifest,
                       ModelRules* out);

// Whether a tensor may be split under `rules` at tp > 1: matched, or a 1-D tensor or buffer (which
// stays whole). invalid_argument naming the tensor and the family file otherwise.
Status check_matched(const Manifest& manifest, const ModelRules& rules, uint32_t id);

}  // namespace dcr
