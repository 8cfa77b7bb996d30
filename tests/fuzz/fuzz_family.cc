// libFuzzer target for model-family files and config.json: an input is a family file, then a line
// "#config", then a config.json (without that line: the family alone, with a fixed Llama config).
// Resolved against a fixed checkpoint (a dense Llama with MoE experts beside it), every input must
// end in a Status, or in rules whose training, serving and block-FP8 holdings all fit their buffers:
// never a crash, a hang (a pattern is matched in linear time), an allocation sized by the input or
// a sanitizer report.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dcr/layout/model_config.h"
#include "dcr/layout/serve_quant.h"
#include "dcr/layout/serving_layout.h"
#include "dcr/layout/training_layout.h"
#include "fuzz/fuzz_support.h"

namespace {

constexpr const char* kSeparator = "\n#config\n";

dcr::TensorDesc tensor(const std::string& name, std::vector<int64_t> shape) {
  return dcr::TensorDesc{name, dcr::DType::bf16, std::move(shape), false};
}

// Two layers of hidden 128, 4 heads of 32 (2 KV heads), MLP 256, vocabulary 100, 4 experts of 128.
const dcr::Manifest& checkpoint() {
  static const dcr::Manifest m = [] {
    dcr::Manifest m;
    m.tensors.push_back(tensor("model.embed_tokens.weight", {100, 128}));
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      for (const char* n : {"q", "o"}) m.tensors.push_back(tensor(p + "self_attn." + n + "_proj.weight", {128, 128}));
      for (const char* n : {"k", "v"}) m.tensors.push_back(tensor(p + "self_attn." + n + "_proj.weight", {64, 128}));
      m.tensors.push_back(tensor(p + "self_attn.q_norm.weight", {32}));
      for (const char* n : {"gate", "up"}) m.tensors.push_back(tensor(p + "mlp." + n + "_proj.weight", {256, 128}));
      m.tensors.push_back(tensor(p + "mlp.down_proj.weight", {128, 256}));
      m.tensors.push_back(tensor(p + "mlp.gate.weight", {4, 128}));
      for (int e = 0; e < 4; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        for (const char* n : {"gate", "up"}) m.tensors.push_back(tensor(x + n + "_proj.weight", {128, 128}));
        m.tensors.push_back(tensor(x + "down_proj.weight", {128, 128}));
      }
      m.tensors.push_back(tensor(p + "input_layernorm.weight", {128}));
    }
    m.tensors.push_back(tensor("model.norm.weight", {128}));
    m.tensors.push_back(tensor("lm_head.weight", {100, 128}));
    return m;
  }();
  return m;
}

const char* const kConfig =
    R"({"model_type": "llama", "hidden_size": 128, "intermediate_size": 256, "moe_intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "num_experts": 4, "tie_word_embeddings": false})";

// Every piece lies inside its buffer.
void check_fits(const dcr::Holdings& h) {
  for (const dcr::LocalPiece& p : h.pieces) {
    if (p.buffer >= h.buffer_elements.size() || p.box.empty() || p.pitch < p.box.cols ||
        p.offset + (p.box.rows - 1) * p.pitch + p.box.cols > h.buffer_elements[p.buffer]) {
      __builtin_trap();
    }
  }
}

void lay_out(const dcr::Manifest& m, const dcr::ModelRules& rules) {
  for (int tp : {1, 2, 4}) {
    for (int ep : {1, 2}) {
      for (int r = 0; r < tp && tp % ep == 0; ++r) {
        dcr::Holdings h;
        if (dcr::serving_holdings(m, dcr::ServingLayout{tp, true, ep, &rules}, r, &h).is_ok()) check_fits(h);
      }
    }
  }
  for (int rank = 0; rank < 4; ++rank) {
    dcr::Holdings h;
    if (dcr::training_holdings(m, dcr::TrainingLayout{2, 2, 1, &rules}, rank, &h).is_ok()) check_fits(h);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(kSeparator);
  const std::string family_text = input.substr(0, cut);
  const nlohmann::json config = nlohmann::json::parse(
      cut == std::string::npos ? std::string(kConfig) : input.substr(cut + std::string(kSeparator).size()), nullptr, false);
  dcr::ModelFamily family;
  if (!dcr::parse_model_family(family_text, "fuzz.json", &family).is_ok()) return 0;
  dcr::ModelDims dims;
  if (!dcr::model_dims(config, &dims).is_ok()) return 0;
  dcr::ModelRules rules;
  if (!dcr::resolve_rules(family, dims, checkpoint(), &rules).is_ok()) return 0;
  if (!dcr::check_config(config, checkpoint(), rules).is_ok()) return 0;
  (void)dcr::layout_difference(config, nlohmann::json::parse(kConfig));
  lay_out(checkpoint(), rules);
  dcr::ServedModel served;
  if (dcr::serve_model(checkpoint(), rules, dcr::ServeQuant::fp8_block, &served).is_ok()) lay_out(served.manifest, served.rules);
  return 0;
}

// The shipped family files, each with the checkpoint's config.
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DCR_SOURCE_DIR) + "/configs/models")) {
    std::vector<uint8_t> bytes = dcr::test::file_bytes(entry.path().string());
    const std::string tail = std::string(kSeparator) + kConfig;
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    seeds.push_back(std::move(bytes));
  }
  return seeds;
}
