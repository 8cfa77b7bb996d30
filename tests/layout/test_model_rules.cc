// Model-family files: every shipped family loads, config.json picks its family, sizes come from
// config.json, and a bad family file is refused naming the file and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "dcr/layout/model_rules.h"
#include "dcr/layout/serving_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;
using json = nlohmann::json;

TEST(ModelRules, EveryShippedFamilyLoads) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir())) {
    ModelFamily f;
    ASSERT_TRUE(load_model_family(entry.path().string(), &f).is_ok()) << entry.path();
    EXPECT_TRUE(names.insert(f.name).second) << "family named twice: " << f.name;
    EXPECT_FALSE(f.rules.empty()) << f.name;
  }
  for (const char* n : {"dcr", "llama", "qwen2", "qwen3", "mixtral", "qwen3_moe"}) EXPECT_TRUE(names.count(n)) << n;
}

TEST(ModelRules, ConfigPicksTheFamily) {
  ModelFamily f;
  ASSERT_TRUE(pick_model_family(json{{"model_type", "mistral"}}, &f).is_ok());
  EXPECT_EQ(f.name, "llama");
  ASSERT_TRUE(pick_model_family(json{{"model_type", "x"}, {"architectures", {"Qwen3MoeForCausalLM"}}}, &f).is_ok());
  EXPECT_EQ(f.name, "qwen3_moe");
  const Status s = pick_model_family(json{{"model_type", "gpt2"}}, &f);
  EXPECT_EQ(s.code(), Code::not_found);
  EXPECT_NE(s.message().find("gpt2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--model-family"), std::string::npos) << s.message();
}

TEST(ModelRules, SizesFromConfig) {
  ModelDims d;
  ASSERT_TRUE(model_dims(json{{"hidden_size", 64}, {"num_attention_heads", 4}, {"tie_word_embeddings", true},
                              {"num_local_experts", 8}},
                         &d)
                  .is_ok());
  EXPECT_EQ(d.head_dim, 16);  // hidden / heads when head_dim is absent
  EXPECT_EQ(d.kv_heads, 4);   // as many KV heads as heads when absent
  EXPECT_EQ(d.experts, 8);
  EXPECT_TRUE(d.tied);
  const Status s = model_dims(json{{"num_key_value_heads", "two"}}, &d);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("num_key_value_heads"), std::string::npos) << s.message();
}

TEST(ModelRules, BadFamilyFilesAreRefusedNamingTheField) {
  const std::string path = ::testing::TempDir() + "dcr_bad_family.json";
  auto refused = [&](const std::string& text, const std::string& word) {
    std::ofstream(path) << text;
    ModelFamily f;
    const Status s = load_model_family(path, &f);
    EXPECT_EQ(s.code(), Code::invalid_argument) << text;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(word), std::string::npos) << s.message();
  };
  refused(R"({"rules": [{"pattern": "x", "kind": "diagonal"}]})", "diagonal");
  refused(R"({"rules": [{"pattern": "(", "kind": "row"}]})", "not a regex");
  refused(R"({"rules": [{"pattern": "q", "kind": "qkv"}]})", "needs \"member\"");
  refused(R"({"rules": [{"pattern": "e", "kind": "expert_row"}]})", "needs \"expert\"");
  refused(R"({"rules": {}})", "rules");
  refused(R"({"rules": [], "vocab_padding": "64"})", "vocab_padding");
  std::remove(path.c_str());
  ModelFamily f;
  EXPECT_EQ(load_model_family("no_such_family", &f).code(), Code::not_found);
}

TEST(ModelRules, KvHeadsReplicateWhenTpExceedsThem) {
  // Hq 4, Hkv 2, head_dim 2, hidden 8, tp 4: ranks 0 and 1 hold KV head 0, ranks 2 and 3 head 1.
  Manifest m;
  m.tensors = {tensor("model.layers.0.self_attn.q_proj.weight", {8, 8}),
               tensor("model.layers.0.self_attn.k_proj.weight", {4, 8}),
               tensor("model.layers.0.self_attn.v_proj.weight", {4, 8})};
  ModelFamily f;
  ASSERT_TRUE(load_model_family("llama", &f).is_ok());
  ModelRules rules;
  ASSERT_TRUE(resolve_rules(f, ModelDims{4, 2, 2, 0, false}, m, &rules).is_ok());
  for (int r = 0; r < 4; ++r) {
    Holdings h;
    ASSERT_TRUE(serving_holdings(m, ServingLayout{4, true, 1, &rules}, r, &h).is_ok());
    ASSERT_EQ(h.buffer_names, std::vector<std::string>{"model.layers.0.self_attn.qkv_proj.weight"});
    EXPECT_EQ(h.buffer_shapes[0], (std::vector<int64_t>{6, 8}));  // 1 q head + 1 k head + 1 v head of 2 rows
    ASSERT_EQ(h.pieces.size(), 3u);
    EXPECT_EQ(h.pieces[0].box, (Box{0, uint64_t(2 * r), 2, 0, 8}));
    EXPECT_EQ(h.pieces[1].box, (Box{1, uint64_t(2 * (r / 2)), 2, 0, 8}));
    EXPECT_EQ(h.pieces[2].offset, 4u * 8);
  }
}

}  // namespace
}  // namespace dcr
