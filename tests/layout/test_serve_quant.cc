// Block-FP8 serving (include/dcr/layout/serve_quant.h): which tensors are quantized, that a served
// box's bits equal the whole-matrix quantizer's, and that training and serving holdings cut
// quantized weights on whole blocks with the scales following their blocks. The served layout is
// checked against an independent numpy model end to end in tests/models/refit_families.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dcr/layout/fp8_block.h"
#include "dcr/layout/serve_quant.h"
#include "dcr/layout/serving_layout.h"
#include "dcr/layout/training_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;

// d = 256, k and v 256 wide, MLP 512, vocabulary 300: every TP-2 band falls on whole blocks.
Manifest aligned_model() { return odd_model(256, 256, 512, 300); }

ServedModel served_of(const Manifest& m, const ModelRules& rules) {
  ServedModel s;
  const Status st = serve_model(m, rules, ServeQuant::fp8_block, &s);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return s;
}

// Random bf16 weights of a few magnitudes per tensor.
CanonicalBits random_bits(const Manifest& m) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  CanonicalBits bits;
  for (const TensorDesc& t : m.tensors) {
    bits.emplace_back(t.nbytes());
    if (t.dtype != DType::bf16) continue;
    auto* w = reinterpret_cast<uint16_t*>(bits.back().data());
    for (uint64_t i = 0; i < t.numel(); ++i) w[i] = f32_to_bf16_rne(normal(rng) * std::ldexp(1.0f, int(i / 5000 % 9) - 6));
  }
  return bits;
}

TensorBytes bytes_of(const CanonicalBits& bits) {
  return [&bits](uint32_t id) { return bits[id].data(); };
}

TEST(ServeQuant, LinearWeightsBecomeE4m3WithTheirScalesTheRestStays) {
  const Manifest m = aligned_model();
  const ServedModel s = served_of(m, rules_of(m));
  for (const TensorDesc& t : m.tensors) {
    const uint32_t id = id_of(s.manifest, t.name);
    const bool linear = t.shape.size() == 2 && split_kind(t) != 'v';
    EXPECT_EQ(s.manifest.tensors[id].dtype, linear ? DType::f8_e4m3 : t.dtype) << t.name;
    EXPECT_EQ(s.manifest.tensors[id].shape, t.shape) << t.name;
    if (!linear) {
      EXPECT_EQ(s.tensors[id].from, ServedFrom::copy) << t.name;
      continue;
    }
    const TensorDesc& scales = s.manifest.tensors[id + 1];
    EXPECT_EQ(scales.name, t.name + "_scale_inv");
    EXPECT_EQ(scales.dtype, DType::f32);
    EXPECT_EQ(scales.shape, (std::vector<int64_t>{(t.shape[0] + 127) / 128, (t.shape[1] + 127) / 128})) << t.name;
    EXPECT_EQ(s.rules.tensors[id + 1].scales_of, id);
    EXPECT_EQ(s.tensors[id + 1].from, ServedFrom::scales);
  }
  EXPECT_EQ(s.manifest.tensors[id_of(s.manifest, "layers.0.attn.q.weight_scale_inv")].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.rules.tensors[id_of(s.manifest, "layers.0.attn.k.weight_scale_inv")].serve, "layers.0.attn.qkv_scale_inv");

  ServedModel plain;
  ASSERT_TRUE(serve_model(m, rules_of(m), ServeQuant::none, &plain).is_ok());
  EXPECT_EQ(plain.manifest.hash(), m.hash());
}

TEST(ServeQuant, AFamilyRuleSaysWhatIsQuantized) {
  const Manifest m = aligned_model();
  ModelRules rules = rules_of(m);
  rules.tensors[id_of(m, "layers.0.attn.o.weight")].quantize = 0;
  ServedModel s = served_of(m, rules);
  EXPECT_EQ(s.manifest.tensors[id_of(s.manifest, "layers.0.attn.o.weight")].dtype, DType::bf16);
  EXPECT_EQ(s.manifest.tensors[id_of(s.manifest, "layers.1.attn.o.weight")].dtype, DType::f8_e4m3);

  rules = rules_of(m);
  rules.tensors[id_of(m, "embed_tokens.weight")].quantize = 1;
  Status st = serve_model(m, rules, ServeQuant::fp8_block, &s);
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("'embed_tokens.weight' is a vocabulary table"), std::string::npos) << st.message();

  Manifest f32 = m;
  f32.tensors[id_of(m, "layers.1.mlp.up.weight")].dtype = DType::f32;
  st = serve_model(f32, rules_of(f32), ServeQuant::fp8_block, &s);
  EXPECT_NE(st.message().find("'layers.1.mlp.up.weight' is f32"), std::string::npos) << st.message();

  ServeQuant q;
  EXPECT_NE(parse_serve_quant("fp8", &q).message().find("none, fp8-block"), std::string::npos);
}

TEST(ServeQuant, ServedBoxesEqualTheWholeMatrixQuantizer) {
  Manifest m = aligned_model();
  m.tensors[id_of(m, "layers.0.mlp.down.weight")].shape = {300, 385};  // edge blocks both ways
  const ServedModel s = served_of(m, rules_of(m));
  const CanonicalBits bits = random_bits(m);
  const BoxBytes served = served_bytes(m, s.manifest, s.tensors, bytes_of(bits));
  for (uint32_t id = 0; id < s.manifest.tensors.size(); ++id) {
    if (s.tensors[id].from != ServedFrom::fp8) continue;
    const TensorDesc& t = s.manifest.tensors[id];
    const uint64_t rows = tensor_rows(t), cols = tensor_cols(t), blocks = s.manifest.tensors[id + 1].numel();
    std::vector<uint8_t> e4m3(rows * cols), got(rows * cols);
    std::vector<float> scales(blocks), got_scales(blocks);
    const auto* w = reinterpret_cast<const uint16_t*>(bits[s.tensors[id].source].data());
    ASSERT_TRUE(quantize_fp8_block(w, rows, cols, e4m3.data(), scales.data()).is_ok());
    ASSERT_TRUE(served(whole_tensor(id, t), got.data(), cols).is_ok());
    EXPECT_EQ(got, e4m3) << t.name;
    const TensorDesc& grid = s.manifest.tensors[id + 1];
    ASSERT_TRUE(served(whole_tensor(id + 1, grid), reinterpret_cast<uint8_t*>(got_scales.data()), tensor_cols(grid)).is_ok());
    EXPECT_EQ(std::memcmp(got_scales.data(), scales.data(), blocks * 4), 0) << t.name;
    // The last block row and column alone, into a pitched buffer.
    const Box corner{id, (rows - 1) / 128 * 128, rows - (rows - 1) / 128 * 128, (cols - 1) / 128 * 128,
                     cols - (cols - 1) / 128 * 128};
    std::vector<uint8_t> part(corner.rows * (corner.cols + 3));
    ASSERT_TRUE(served(corner, part.data(), corner.cols + 3).is_ok());
    for (uint64_t r = 0; r < corner.rows; ++r) {
      EXPECT_EQ(std::memcmp(&part[r * (corner.cols + 3)], &e4m3[(corner.row0 + r) * cols + corner.col0], corner.cols), 0);
    }
  }
  const uint32_t q = id_of(s.manifest, "layers.0.attn.q.weight");
  std::vector<uint8_t> scratch(256 * 256);
  const Status cut = served(Box{q, 64, 128, 0, 256}, scratch.data(), 256);
  EXPECT_EQ(cut.code(), Code::invalid_argument);
  EXPECT_NE(cut.message().find("cuts its 128 x 128 blocks"), std::string::npos) << cut.message();
}

TEST(ServeQuant, ANonFiniteBlockIsRefusedNamingTheTensor) {
  const Manifest m = aligned_model();
  const ServedModel s = served_of(m, rules_of(m));
  CanonicalBits bits = random_bits(m);
  reinterpret_cast<uint16_t*>(bits[id_of(m, "layers.1.attn.v.weight")].data())[130 * 256 + 3] = 0x7FC0;  // NaN
  const BoxBytes served = served_bytes(m, s.manifest, s.tensors, bytes_of(bits));
  const uint32_t v = id_of(s.manifest, "layers.1.attn.v.weight");
  std::vector<uint8_t> out(128 * 256 * 4);
  EXPECT_TRUE(served(Box{v, 0, 128, 0, 256}, out.data(), 256).is_ok());  // the block row without it
  const Status st = served(Box{v + 1, 1, 1, 0, 2}, out.data(), 2);  // block row 1
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("tensor 'layers.1.attn.v.weight'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("block at row 128, column 0 holds a non-finite value (element [130, 3])"), std::string::npos)
      << st.message();
}

// Every held box of a quantized weight lies on whole blocks, and its rank holds exactly the
// matching boxes of the scale grid.
void expect_blocks_with_scales(const Manifest& served, const ModelRules& rules, const Holdings& h, const std::string& who) {
  for (const LocalPiece& p : h.pieces) {
    const TensorRule& rule = rules.tensors[p.box.tensor];
    if (rule.block == 0 || rule.scales_of >= 0) continue;
    const TensorDesc& t = served.tensors[p.box.tensor];
    EXPECT_EQ(p.box.row0 % 128, 0u) << who << " " << p.box.describe();
    EXPECT_EQ(p.box.col0 % 128, 0u) << who << " " << p.box.describe();
    EXPECT_TRUE(p.box.rows % 128 == 0 || p.box.row0 + p.box.rows == tensor_rows(t)) << who << " " << p.box.describe();
    EXPECT_TRUE(p.box.cols % 128 == 0 || p.box.col0 + p.box.cols == tensor_cols(t)) << who << " " << p.box.describe();
    const Box grid{p.box.tensor + 1, p.box.row0 / 128, (p.box.rows + 127) / 128, p.box.col0 / 128, (p.box.cols + 127) / 128};
    int found = 0;
    for (const LocalPiece& q : h.pieces) found += q.box == grid;
    EXPECT_EQ(found, 1) << who << ": the scales of " << p.box.describe();
  }
}

TEST(ServeQuant, HoldingsCutWholeBlocksAndTheScalesFollowThem) {
  const Manifest m = aligned_model();
  const ModelRules rules = rules_of(m, "(conv\\.weight|scale)");
  const ServedModel s = served_of(m, rules);
  for (int tp : {1, 2}) {
    for (int r = 0; r < tp; ++r) {
      Holdings h;
      const Status st = serving_holdings(s.manifest, ServingLayout{tp, true, 1, &s.rules}, r, &h);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      expect_blocks_with_scales(s.manifest, s.rules, h, "serving tp " + std::to_string(tp));
    }
  }
  for (const auto& [fsdp, tp] : {std::pair{3, 1}, std::pair{2, 2}, std::pair{1, 2}}) {
    Values counts = zero_model(s.manifest);
    for (int rank = 0; rank < fsdp * tp; ++rank) {
      Holdings h;
      const Status st = training_holdings(s.manifest, TrainingLayout{fsdp, tp, 1, &s.rules}, rank, &h);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      expect_blocks_with_scales(s.manifest, s.rules, h, "training rank " + std::to_string(rank));
      for (const LocalPiece& p : h.pieces) count_box(s.manifest, p.box, &counts);
    }
    expect_all_counts(s.manifest, counts, 1, "fsdp " + std::to_string(fsdp) + " x tp " + std::to_string(tp));
  }
}

TEST(ServeQuant, ASplitThatCutsBlocksIsRefusedNamingTheTensor) {
  const Manifest m = odd_model(192, 64, 512, 300);  // q's TP-2 band is 96 rows
  const ModelRules rules = rules_of(m, "(conv\\.weight|scale)");
  const ServedModel s = served_of(m, rules);
  Holdings h;
  Status st = serving_holdings(s.manifest, ServingLayout{2, true, 1, &s.rules}, 1, &h);
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("serving tp rank 1's part of tensor 'layers.0.attn.q.weight' (rows [96, 192)"),
            std::string::npos) << st.message();
  st = training_holdings(s.manifest, TrainingLayout{1, 2, 1, &s.rules}, 0, &h);
  EXPECT_NE(st.message().find("training tp rank 0's part of tensor 'layers.0.attn.q.weight'"), std::string::npos)
      << st.message();
  EXPECT_TRUE(serving_holdings(s.manifest, ServingLayout{1, true, 1, &s.rules}, 0, &h).is_ok());  // whole at TP 1
}

TEST(ServeQuant, AServedShardLoadsAndNamesItsFirstDifference) {
  const Manifest m = aligned_model();
  const ModelRules rules = rules_of(m, "(conv\\.weight|scale)");
  const ServedModel s = served_of(m, rules);
  const CanonicalBits bits = random_bits(m);
  const BoxBytes served = served_bytes(m, s.manifest, s.tensors, bytes_of(bits));
  Holdings h;
  ASSERT_TRUE(serving_holdings(s.manifest, ServingLayout{2, true, 1, &s.rules}, 1, &h).is_ok());
  Shard shard(s.manifest, h);
  ASSERT_TRUE(shard.load(served).is_ok());
  bool same = false;
  std::string difference;
  ASSERT_TRUE(shard.matches(served, &same, &difference).is_ok());
  EXPECT_TRUE(same) << difference;
  const uint32_t qkv = static_cast<uint32_t>(
      std::find(h.buffer_names.begin(), h.buffer_names.end(), "layers.1.attn.qkv_scale_inv") - h.buffer_names.begin());
  ASSERT_LT(qkv, h.buffer_names.size());
  shard.buffer(qkv)[5] ^= 1;  // one bit of one scale
  ASSERT_TRUE(shard.matches(served, &same, &difference).is_ok());
  EXPECT_FALSE(same);
  EXPECT_NE(difference.find("buffer 'layers.1.attn.qkv_scale_inv'"), std::string::npos) << difference;
}

}  // namespace
}  // namespace dcr
