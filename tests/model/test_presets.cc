#include <gtest/gtest.h>

#include <set>

#include "dcr/model/presets.h"

namespace dcr {
namespace {

uint64_t parameter_count(const Manifest& m) {
  uint64_t n = 0;
  for (const TensorDesc& t : m.tensors) n += t.is_buffer ? 0 : t.numel();
  return n;
}

const TensorDesc& find(const Manifest& m, const std::string& name) {
  for (const TensorDesc& t : m.tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return m.tensors.front();
}

TEST(Presets, NamesAreTheFourSizes) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"tiny", "small", "medium", "large"}));
}

TEST(Presets, ParameterCountsMatchTheirSize) {
  const std::pair<const char*, std::pair<double, double>> expected[] = {
      {"tiny", {2e6, 4e6}}, {"small", {25e6, 35e6}}, {"medium", {100e6, 140e6}}, {"large", {400e6, 600e6}}};
  for (const auto& e : expected) {
    Manifest m;
    ASSERT_TRUE(make_preset(e.first, &m).is_ok());
    const double n = static_cast<double>(parameter_count(m));
    EXPECT_GE(n, e.second.first) << e.first;
    EXPECT_LE(n, e.second.second) << e.first;
  }
}

TEST(Presets, ValidUniqueAndDistinct) {
  std::set<uint64_t> hashes;
  for (const std::string& name : preset_names()) {
    Manifest m;
    ASSERT_TRUE(make_preset(name, &m).is_ok());
    EXPECT_TRUE(m.validate().is_ok()) << name;
    hashes.insert(m.hash());
  }
  EXPECT_EQ(hashes.size(), preset_names().size());
}

TEST(Presets, CanonicalOrderAndShapes) {
  Manifest m;
  ASSERT_TRUE(make_preset("tiny", &m).is_ok());
  const int64_t d = find(m, "embed_tokens.weight").shape[1];
  const int64_t vocab = find(m, "embed_tokens.weight").shape[0];
  const int64_t kv = find(m, "layers.0.attn.k.weight").shape[0];
  const int64_t ff = find(m, "layers.0.mlp.gate.weight").shape[0];
  EXPECT_LT(kv, d);
  EXPECT_NEAR(static_cast<double>(ff) / d, 2.7, 0.1);

  const std::vector<std::pair<std::string, std::vector<int64_t>>> layer0 = {
      {"layers.0.input_norm.weight", {d}}, {"layers.0.attn.q.weight", {d, d}},
      {"layers.0.attn.k.weight", {kv, d}}, {"layers.0.attn.v.weight", {kv, d}},
      {"layers.0.attn.o.weight", {d, d}},  {"layers.0.post_norm.weight", {d}},
      {"layers.0.mlp.gate.weight", {ff, d}}, {"layers.0.mlp.up.weight", {ff, d}},
      {"layers.0.mlp.down.weight", {d, ff}}};
  EXPECT_EQ(m.tensors[0].name, "embed_tokens.weight");
  for (size_t i = 0; i < layer0.size(); ++i) {
    EXPECT_EQ(m.tensors[1 + i].name, layer0[i].first);
    EXPECT_EQ(m.tensors[1 + i].shape, layer0[i].second) << layer0[i].first;
  }
  const size_t n = m.tensors.size();
  EXPECT_EQ(m.tensors[n - 4].name, "final_norm.weight");
  EXPECT_EQ(m.tensors[n - 3].name, "lm_head.weight");
  EXPECT_EQ(m.tensors[n - 3].shape, (std::vector<int64_t>{vocab, d}));
  EXPECT_EQ(n, 1 + 9 * 4 + 2 + 2u);  // tiny has 4 layers
}

TEST(Presets, ParametersAreBf16AndBuffersComeLast) {
  Manifest m;
  ASSERT_TRUE(make_preset("small", &m).is_ok());
  const size_t n = m.tensors.size();
  for (size_t i = 0; i + 2 < n; ++i) {
    EXPECT_FALSE(m.tensors[i].is_buffer) << m.tensors[i].name;
    EXPECT_EQ(m.tensors[i].dtype, DType::bf16) << m.tensors[i].name;
  }
  const TensorDesc& inv_freq = m.tensors[n - 2];
  EXPECT_EQ(inv_freq.name, "rotary.inv_freq");
  EXPECT_TRUE(inv_freq.is_buffer);
  EXPECT_EQ(inv_freq.dtype, DType::f32);
  EXPECT_EQ(inv_freq.shape, (std::vector<int64_t>{32}));  // head_dim 64
  const TensorDesc& counter = m.tensors[n - 1];
  EXPECT_EQ(counter.name, "step_counter");
  EXPECT_TRUE(counter.is_buffer);
  EXPECT_EQ(counter.dtype, DType::i64);
  EXPECT_EQ(counter.shape, (std::vector<int64_t>{1}));
}

TEST(Presets, UnknownNameListsTheValidOnes) {
  Manifest m;
  const Status s = make_preset("huge", &m);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("huge"), std::string::npos);
  for (const std::string& name : preset_names()) EXPECT_NE(s.message().find(name), std::string::npos);
}

}  // namespace
}  // namespace dcr
