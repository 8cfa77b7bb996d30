// Model-family files: every shipped family loads, config.json picks its family, sizes come from
// config.json, and a bad family file is refused naming the file and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <chrono>

#include "dcr/layout/model_config.h"
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
  refused(R"J({"rules": [{"pattern": "x", "kind": "diagonal"}]})J", "diagonal");
  refused(R"J({"rules": [{"pattern": "(", "kind": "row"}]})J", "not a regex RE2 takes");
  refused(R"J({"rules": [{"pattern": "(a)\\1", "kind": "row"}]})J", "no backreferences");
  refused(R"J({"rules": [{"pattern": "(a)", "kind": "row", "serve": "x.$9"}]})J", "uses $9, but the pattern has 1 group");
  refused(R"J({"rules": [{"pattern": "(a)", "kind": "row", "serve": "x.$"}]})J", "must be followed by a group number");
  refused(R"J({"rules": [], "vocab_padding": 1099511627776})J", "\"vocab_padding\" must be in [1, 65536]");
  refused(R"J({"rules": [], "vocab_padding": 0.5})J", "\"vocab_padding\" must be a whole number");
  refused(R"J({"rules": [{"pattern": "(k|q|v)", "kind": "qkv", "serve": "qkv", "member": "$1", "members": ["k", "q", "v"]}]})J",
          "lists its members query first");
  refused(R"J({"rules": [{"pattern": "x", "kind": "row", "shape": [3]}]})J", "\"shape\" entries are config.json keys");
  refused(R"({"rules": [{"pattern": ")" + std::string(2000, 'a') + R"(", "kind": "row"}]})", "at most 1024");
  refused(R"J({"rules": [[[[[[1]]]]]]})J", "a rule needs \"pattern\" and \"kind\" (got an array)");
  refused(R"J({"rules": [{"pattern": "q", "kind": "qkv"}]})J", "needs \"member\"");
  refused(R"J({"rules": [{"pattern": "e", "kind": "expert_row"}]})J", "needs \"expert\"");
  refused(R"J({"rules": {}})J", "rules");
  refused(R"J({"rules": [], "vocab_padding": "64"})J", "vocab_padding");
  std::remove(path.c_str());
  ModelFamily f;
  EXPECT_EQ(load_model_family("no_such_family", &f).code(), Code::not_found);
}

// Patterns match in time linear in the name: one that backtracks catastrophically under a
// backtracking matcher resolves 2,000 long names at once.
TEST(ModelRules, ABacktrackingPatternCannotHangSetUp) {
  ModelFamily f;
  ASSERT_TRUE(parse_model_family(R"J({"rules": [{"pattern": "(m|o|d)*(.*)*(.*)*x", "kind": "replicated"}]})J", "bt.json", &f)
                  .is_ok());
  Manifest m;
  for (int i = 0; i < 2000; ++i) m.tensors.push_back(tensor("model.layers." + std::to_string(i) + std::string(200, 'm') + ".weight", {2}));
  ModelRules rules;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(resolve_rules(f, ModelDims{}, m, &rules).is_ok());
  EXPECT_FALSE(rules.tensors[0].matched);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

TEST(ModelRules, ATiedCheckpointHoldingItsLmHeadIsRefused) {
  Manifest m;
  m.tensors = {tensor("model.embed_tokens.weight", {100, 8}), tensor("lm_head.weight", {100, 8})};
  ModelFamily f;
  ASSERT_TRUE(load_model_family("llama", &f).is_ok());
  ModelRules rules;
  ModelDims tied;
  tied.tied = true;
  const Status s = resolve_rules(f, tied, m, &rules);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("tie_word_embeddings: true, but the checkpoint holds 'lm_head.weight'"), std::string::npos)
      << s.message();
  m.tensors.pop_back();
  EXPECT_TRUE(resolve_rules(f, tied, m, &rules).is_ok());
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
