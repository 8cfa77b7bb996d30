// config.json as the layouts read it (include/dcr/layout/model_config.h): counts are whole numbers
// in range, they are checked against the weights they describe, and the fields a layout depends on
// are compared between versions.
#include <gtest/gtest.h>

#include "dcr/layout/model_config.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;
using json = nlohmann::json;

// A two-layer Llama of hidden 8, 2 heads of 4 (1 KV head), MLP 12, vocabulary 10, and its config.
Manifest llama() {
  Manifest m;
  m.tensors.push_back(tensor("model.embed_tokens.weight", {10, 8}));
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.tensors.push_back(tensor(p + "self_attn.q_proj.weight", {8, 8}));
    m.tensors.push_back(tensor(p + "self_attn.k_proj.weight", {4, 8}));
    m.tensors.push_back(tensor(p + "self_attn.v_proj.weight", {4, 8}));
    m.tensors.push_back(tensor(p + "self_attn.o_proj.weight", {8, 8}));
    m.tensors.push_back(tensor(p + "mlp.gate_proj.weight", {12, 8}));
    m.tensors.push_back(tensor(p + "mlp.up_proj.weight", {12, 8}));
    m.tensors.push_back(tensor(p + "mlp.down_proj.weight", {8, 12}));
    m.tensors.push_back(tensor(p + "input_layernorm.weight", {8}));
  }
  m.tensors.push_back(tensor("model.norm.weight", {8}));
  m.tensors.push_back(tensor("lm_head.weight", {10, 8}));
  return m;
}

json llama_config() {
  return json{{"model_type", "llama"},     {"hidden_size", 8},       {"intermediate_size", 12},
              {"num_hidden_layers", 2},    {"num_attention_heads", 2}, {"num_key_value_heads", 1},
              {"vocab_size", 10},          {"tie_word_embeddings", false}};
}

Status rules_with(const json& config, const Manifest& m = llama()) {
  ModelRules rules;
  return rules_for_model("", config, m, &rules);
}

TEST(ModelConfig, CountsAreWholeNumbersInRange) {
  ModelDims d;
  ASSERT_TRUE(model_dims(llama_config(), &d).is_ok());
  EXPECT_EQ(d.head_dim, 4);
  EXPECT_EQ(d.kv_heads, 1);
  struct Bad {
    const char* key;
    json value;
    const char* says;
  };
  const Bad cases[] = {
      {"num_attention_heads", 8.5, "\"num_attention_heads\" must be a whole number, got 8.5"},
      {"num_attention_heads", 1e300, "\"num_attention_heads\" must be a whole number, got 1e+300"},
      {"num_attention_heads", -2, "\"num_attention_heads\" must be in [1, 1048576], got -2"},
      {"num_attention_heads", int64_t{1} << 40, "\"num_attention_heads\" must be in [1, 1048576], got 1099511627776"},
      {"num_key_value_heads", 0, "\"num_key_value_heads\" must be in [1, 1048576], got 0"},
      {"hidden_size", "64", "\"hidden_size\" must be a whole number, got \"64\""},
      {"tie_word_embeddings", 1, "\"tie_word_embeddings\" must be true or false, got 1"},
  };
  for (const Bad& c : cases) {
    json config = llama_config();
    config[c.key] = c.value;
    const Status s = model_dims(config, &d);
    EXPECT_EQ(s.code(), Code::invalid_argument) << c.key;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
}

TEST(ModelConfig, SizesThatContradictTheWeightsAreRefused) {
  EXPECT_TRUE(rules_with(llama_config()).is_ok());
  struct Bad {
    const char* key;
    int value;
    const char* says;
  };
  const Bad cases[] = {
      {"vocab_size", 12, "config.json gives vocab_size 12, but tensor 'model.embed_tokens.weight' is [10, 8]"},
      {"hidden_size", 16, "config.json gives hidden_size 16, but tensor 'model.embed_tokens.weight' is [10, 8]"},
      {"intermediate_size", 16, "config.json gives intermediate_size 16, but tensor 'model.layers.0.mlp.gate_proj.weight'"},
      {"num_hidden_layers", 3, "config.json gives num_hidden_layers 3, but the checkpoint has no tensor of layer 2"},
      {"num_hidden_layers", 1, "tensor 'model.layers.1.self_attn.q_proj.weight' is in layer 1, but config.json gives "
                               "num_hidden_layers 1"},
      {"num_key_value_heads", 2, "'model.layers.0.self_attn.k_proj.weight' has 4 rows, but config.json gives 2 KV heads"},
  };
  for (const Bad& c : cases) {
    json config = llama_config();
    config[c.key] = c.value;
    const Status s = rules_with(config);
    EXPECT_EQ(s.code(), Code::invalid_argument) << c.key;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("llama.json"), std::string::npos) << s.message();
  }
  json config = llama_config();
  config.erase("intermediate_size");  // a count config.json does not give is not checked
  EXPECT_TRUE(rules_with(config).is_ok());
}

TEST(ModelConfig, LayoutFieldsThatChangeAreNamed) {
  json after = llama_config();
  EXPECT_EQ(layout_difference(llama_config(), after), "");
  after["num_key_value_heads"] = 2;
  after["head_dim"] = 4;
  after["rope_theta"] = 5e5;  // not a layout field
  EXPECT_EQ(layout_difference(llama_config(), after), "num_key_value_heads 1 -> 2; head_dim (absent) -> 4");
}

}  // namespace
}  // namespace dcr
