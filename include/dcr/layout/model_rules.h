// Model-family rules as data: which tensor-parallel split each checkpoint tensor takes and which
// serving buffer it is loaded into. A family file (configs/models/<family>.json) maps tensor-name
// patterns to a kind and a serving name; a checkpoint's config.json gives the head counts, the
// vocabulary and whether embeddings are tied (model_config.h). No tensor-name rule lives in C++.
// Patterns are RE2 regular expressions (https://github.com/google/re2/wiki/Syntax), matched in time
// linear in the name: no pattern can make set-up hang.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"

namespace re2 {
class RE2;
}

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

// Which pipeline stage holds a tensor outside the layers: the first (embeddings; the default) or the
// last (the final norm and the output layer). Layer tensors go with their layer.
enum class PipelineStage { first, last };

// Sizes from the checkpoint's config.json (0 where absent).
struct ModelDims {
  int64_t heads = 0, kv_heads = 0, head_dim = 0, experts = 0;
  bool tied = false;  // tie_word_embeddings
};

// Bounds on a family file, checked before anything is made from it.
constexpr size_t kMaxFamilyRules = 4096, kMaxPatternBytes = 1024, kMaxMembers = 64;
constexpr int64_t kMaxVocabPadding = 1 << 16;

// A compiled pattern (shared: rules are copied).
using Pattern = std::shared_ptr<const re2::RE2>;

// One rule of a family file.
struct FamilyRule {
  std::string pattern;  // RE2 pattern matched against the whole tensor name
  Pattern regex;
  SplitKind kind = SplitKind::replicated;
  std::string serve;    // serving buffer name, with $1.. from the pattern's groups; empty: the tensor's name
  std::string member;   // member name (with $n), one of `members`
  std::vector<std::string> members;
  std::string expert;   // expert index (with $n) for expert kinds
  bool dropped_if_tied = false;  // absent when the embeddings are tied (lm_head): a tied checkpoint holding it is refused
  int quantize = -1;             // "quantize": served block-quantized (1) or as it is (0); -1: by kind (serve_quant.h)
  std::vector<std::string> shape;  // "shape": per dim, the config.json count it must equal ("": any)
  PipelineStage stage = PipelineStage::first;  // "stage": "first" or "last", for tensors outside the layers
};

struct ModelFamily {
  std::string name, file;
  std::vector<std::string> model_types, architectures;  // config.json values that pick this family
  int64_t vocab_padding = 64;
  std::vector<FamilyRule> rules;
  std::string text;    // the family file's text (what a publication hands its followers)
  std::string layer;   // "layer": a pattern whose group 1 is a tensor's layer index (num_hidden_layers)
  Pattern layer_regex;
};

// What one manifest tensor resolved to.
struct TensorRule {
  bool matched = false;
  SplitKind kind = SplitKind::replicated;
  std::string serve;   // serving buffer (the tensor's own name unless fused)
  int member = 0, members = 1;
  int64_t expert = -1;
  int quantize = -1;     // the rule's "quantize" (-1: not said)
  std::string pattern;   // the rule that matched (for messages)
  std::vector<std::string> shape;  // its "shape"
  int64_t layer = -1;    // the layer index the family's "layer" pattern finds in the name
  PipelineStage stage = PipelineStage::first;  // its rule's "stage" (tensors outside the layers)
  // Block-quantized serving (serve_quant.h): a weight's parts, at training and at serving, fall on
  // whole `block` x `block` blocks; a scale grid (scales_of: the weight it scales) takes the parts of
  // its weight in block units.
  uint64_t block = 0;
  int64_t scales_of = -1;
};

struct ModelRules {
  std::string family, file;
  std::string family_text;  // the family file's text
  int64_t vocab_padding = 64;
  ModelDims dims;
  bool has_layers = false;  // the family has a "layer" pattern
  std::vector<TensorRule> tensors;  // one per manifest tensor
};

// The folder of family files: $DCR_MODELS_DIR, else the source tree's configs/models.
std::string models_dir();

// A family by name (models_dir()/<name>.json) or by path (anything with '/' or ending in .json).
// not_found or invalid_argument naming the file and the bad field.
Status load_model_family(const std::string& name_or_path, ModelFamily* out);
// A family from the text of a family file (`file` names it in messages).
Status parse_model_family(const std::string& text, const std::string& file, ModelFamily* out);
// Compiles `text` into *out; invalid_argument for a pattern that is too long or not RE2 syntax.
Status compile_pattern(const std::string& text, Pattern* out);

// The family whose model_types holds config.json's "model_type", else whose architectures holds
// one of its "architectures"; not_found listing the families when none does.
Status pick_model_family(const nlohmann::json& config, ModelFamily* out);

// The first rule matching each tensor (unmatched tensors stay replicated with matched = false).
// invalid_argument naming the tensor for a member outside its rule's members or a bad expert index,
// and for a tensor its rule says is absent when the embeddings are tied (dims.tied).
Status resolve_rules(const ModelFamily& family, const ModelDims& dims, const Manifest& manifest, ModelRules* out);

// The rules for a model: the family named (a name or a path), else the one config.json picks, else
// (no config.json: null) dcr's presets' family "dcr"; sizes from config.json, which is checked
// against the weights (model_config.h).
Status rules_for_model(const std::string& family, const nlohmann::json& config, const Manifest& manifest,
                       ModelRules* out);

// The same with the family given (a publication's, parsed from the text it stores).
Status rules_for_family(const ModelFamily& family, const nlohmann::json& config, const Manifest& manifest,
                        ModelRules* out);

// Whether a tensor may be split under `rules` at tp > 1: matched, or a 1-D tensor or buffer (which
// stays whole). invalid_argument naming the tensor and the family file otherwise.
Status check_matched(const Manifest& manifest, const ModelRules& rules, uint32_t id);

}  // namespace dcr
