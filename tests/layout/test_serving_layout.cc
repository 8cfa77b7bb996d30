#include <gtest/gtest.h>

#include <map>

#include "dcr/layout/serving_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;

// What a serving runtime's loader holds on tp rank `tp_rank`, by buffer name: each tensor's TP part,
// with q/k/v and gate/up concatenated by rows when fused.
std::map<std::string, std::vector<uint64_t>> expected_buffers(const Manifest& m, const Values& model,
                                                              const ServingLayout& l, int tp_rank) {
  std::map<std::string, std::vector<uint64_t>> out;
  for (uint32_t id = 0; id < m.tensors.size(); ++id) {
    std::string name = m.tensors[id].name;
    const size_t attn = name.find("attn."), mlp = name.find("mlp.");
    if (l.fuse && attn != std::string::npos && name.find("attn.o.") == std::string::npos) {
      name = name.substr(0, attn) + "attn.qkv";
    } else if (l.fuse && mlp != std::string::npos && name.find("mlp.down.") == std::string::npos) {
      name = name.substr(0, mlp) + "mlp.gate_up";
    }
    const std::vector<uint64_t> part = tp_part_values(m, model, id, l.tp, tp_rank);
    out[name].insert(out[name].end(), part.begin(), part.end());
  }
  return out;
}

void check_serving(const Manifest& m, const ServingLayout& l) {
  SCOPED_TRACE("tp " + std::to_string(l.tp) + (l.fuse ? " fused" : ""));
  const Values model = numbered_model(m);
  const int replicas = 2;
  Values counts = zero_model(m);
  for (int rank = 0; rank < replicas * l.tp; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    Holdings h;
    ASSERT_TRUE(serving_holdings(m, l, rank, &h).is_ok());
    const Values buffers = project(m, model, h);
    std::map<std::string, std::vector<uint64_t>> got;
    for (size_t b = 0; b < buffers.size(); ++b) {
      EXPECT_TRUE(got.emplace(h.buffer_names[b], buffers[b]).second) << "buffer named twice: " << h.buffer_names[b];
    }
    EXPECT_EQ(got, expected_buffers(m, model, l, rank % l.tp));
    for (uint32_t id = 0; id < m.tensors.size(); ++id) {
      if (split_kind(m.tensors[id]) != 'w') continue;
      uint32_t buffer;
      uint64_t offset, pitch;
      EXPECT_TRUE(locate(h, whole_tensor(id, m.tensors[id]), &buffer, &offset, &pitch)) << m.tensors[id].name;
    }
    for (const LocalPiece& p : h.pieces) {
      if (split_kind(m.tensors[p.box.tensor]) != 'w') count_box(m, p.box, &counts);
    }
    for (size_t b = 0; b < buffers.size(); ++b) {  // every buffer's shape covers its elements
      uint64_t n = 1;
      for (int64_t d : h.buffer_shapes[b]) n *= static_cast<uint64_t>(d);
      EXPECT_EQ(n, buffers[b].size()) << h.buffer_names[b];
    }
  }
  // Every split element is held by exactly one tp rank of each replica.
  Values expected = zero_model(m);
  for (uint32_t id = 0; id < m.tensors.size(); ++id) {
    if (split_kind(m.tensors[id]) != 'w') expected[id].assign(m.tensors[id].numel(), replicas);
  }
  EXPECT_EQ(counts, expected);
}

TEST(ServingLayout, TinyBuffersEqualTheLoadedModel) {
  const Manifest m = tiny_model();
  const ModelRules rules = rules_of(m);
  for (int tp : {1, 2, 4}) {
    check_serving(m, ServingLayout{tp, true, 1, &rules});
    check_serving(m, ServingLayout{tp, false, 1, &rules});
  }
}

TEST(ServingLayout, OddModelBuffersEqualTheLoadedModel) {
  // conv.weight (3-D) matches no rule of the dcr family: listed as replicated here.
  const Manifest m = odd_model(6, 2, 10, 10);
  const ModelRules rules = rules_of(m, "conv\\.weight");
  for (int tp : {1, 2}) check_serving(m, ServingLayout{tp, true, 1, &rules});
  const Manifest odd = odd_model(7, 3, 11, 13);
  const ModelRules odd_rules = rules_of(odd);
  check_serving(odd, ServingLayout{1, true, 1, &odd_rules});
}

TEST(ServingLayout, VocabularyIsPaddedAndSplitInEqualBands) {
  // 100 tokens pad to 128: tp 4 bands of 32 rows; rank 3 holds tokens [96, 100) and 28 zero rows.
  Manifest m;
  m.tensors = {tensor("embed_tokens.weight", {100, 8})};
  const ModelRules rules = rules_of(m);
  Holdings h;
  ASSERT_TRUE(serving_holdings(m, ServingLayout{4, true, 1, &rules}, 3, &h).is_ok());
  ASSERT_EQ(h.pieces.size(), 1u);
  EXPECT_EQ(h.pieces[0].box, (Box{0, 96, 4, 0, 8}));
  EXPECT_EQ(h.buffer_elements[0], 32u * 8);
  EXPECT_EQ(h.buffer_shapes[0], (std::vector<int64_t>{32, 8}));
  // tp 8: bands of 16 rows; rank 7 (rows [112, 128)) holds padding only.
  ASSERT_TRUE(serving_holdings(m, ServingLayout{8, true, 1, &rules}, 7, &h).is_ok());
  EXPECT_TRUE(h.pieces.empty());
  EXPECT_EQ(h.buffer_elements[0], 16u * 8);
}

TEST(ServingLayout, FusedOffsetsByHand) {
  const Manifest m = tiny_model();  // d 192, kv 64, ff 512
  Holdings h;
  const ModelRules rules = rules_of(m);
  ASSERT_TRUE(serving_holdings(m, ServingLayout{2, true, 1, &rules}, 3, &h).is_ok());  // replica 1, tp rank 1
  uint32_t buffer;
  uint64_t offset, pitch;
  // q's slice is rows [96, 192) of q: 96 rows of 192, so k's first row (row 32) follows at 96 * 192.
  ASSERT_TRUE(locate(h, Box{id_of(m, "layers.1.attn.q.weight"), 96, 1, 0, 192}, &buffer, &offset, &pitch));
  EXPECT_EQ(h.buffer_names[buffer], "layers.1.attn.qkv");
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(pitch, 192u);
  ASSERT_TRUE(locate(h, Box{id_of(m, "layers.1.attn.k.weight"), 32, 1, 0, 192}, &buffer, &offset, &pitch));
  EXPECT_EQ(h.buffer_names[buffer], "layers.1.attn.qkv");
  EXPECT_EQ(offset, 18432u);
  ASSERT_TRUE(locate(h, Box{id_of(m, "layers.1.attn.v.weight"), 33, 1, 5, 10}, &buffer, &offset, &pitch));
  EXPECT_EQ(offset, (96u + 32 + 1) * 192 + 5);
  EXPECT_EQ(h.buffer_elements[buffer], (96u + 32 + 32) * 192);
  EXPECT_FALSE(locate(h, Box{id_of(m, "layers.1.attn.k.weight"), 31, 2, 0, 192}, &buffer, &offset, &pitch));
  ASSERT_TRUE(locate(h, Box{id_of(m, "layers.1.mlp.up.weight"), 256, 1, 0, 192}, &buffer, &offset, &pitch));
  EXPECT_EQ(h.buffer_names[buffer], "layers.1.mlp.gate_up");
  EXPECT_EQ(offset, 256u * 192);
  // Row-parallel o keeps columns [96, 192) of every row: pitch 96.
  ASSERT_TRUE(locate(h, Box{id_of(m, "layers.1.attn.o.weight"), 2, 1, 100, 1}, &buffer, &offset, &pitch));
  EXPECT_EQ(h.buffer_names[buffer], "layers.1.attn.o.weight");
  EXPECT_EQ(offset, 2u * 96 + 4);
  EXPECT_EQ(pitch, 96u);
  EXPECT_FALSE(touches(h, Box{id_of(m, "layers.1.attn.o.weight"), 0, 192, 0, 96}));
}

TEST(ServingLayout, BufferOrderFollowsTheManifest) {
  const Manifest m = tiny_model();
  Holdings h;
  const ModelRules rules = rules_of(m);
  ASSERT_TRUE(serving_holdings(m, ServingLayout{1, true, 1, &rules}, 0, &h).is_ok());
  const std::vector<std::string> first = {"embed_tokens.weight", "layers.0.input_norm.weight", "layers.0.attn.qkv",
                                          "layers.0.attn.o.weight", "layers.0.post_norm.weight", "layers.0.mlp.gate_up",
                                          "layers.0.mlp.down.weight"};
  ASSERT_GE(h.buffer_names.size(), first.size());
  EXPECT_EQ(std::vector<std::string>(h.buffer_names.begin(), h.buffer_names.begin() + first.size()), first);
  EXPECT_EQ(h.buffer_names.size(), m.tensors.size() - 3 * 4);  // 4 layers each lose 3 buffers to fusion
}

TEST(ServingLayout, FusesMembersListedOutOfOrder) {
  Manifest m;
  m.tensors = {tensor("attn.v.weight", {2, 4}), tensor("attn.k.weight", {2, 4}), tensor("attn.q.weight", {4, 4})};
  Holdings h;
  const ModelRules rules = rules_of(m);
  ASSERT_TRUE(serving_holdings(m, ServingLayout{2, true, 1, &rules}, 1, &h).is_ok());
  ASSERT_EQ(h.buffer_names, std::vector<std::string>{"attn.qkv"});
  uint32_t buffer;
  uint64_t offset, pitch;
  ASSERT_TRUE(locate(h, Box{0, 1, 1, 0, 4}, &buffer, &offset, &pitch));  // v's row 1 after q (2 rows), k (1 row)
  EXPECT_EQ(offset, 12u);
}

}  // namespace
}  // namespace dcr
