// Shard::view: a trainer's new version read where the canonical tensors are (no copy). Every
// region of the view holds the bytes a loaded shard holds, and a baseline promoted from the view
// equals one promoted from the loaded shard, byte for byte, at every rank of FSDP x TP layouts.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dcr/layout/shard.h"
#include "dcr/layout/training_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using layout_test::rules_of;
using layout_test::tiny_model;

CanonicalBits random_bits(const Manifest& m) {
  std::mt19937_64 rng(7);
  CanonicalBits bits;
  for (const TensorDesc& t : m.tensors) {
    bits.emplace_back(t.nbytes());
    for (uint8_t& b : bits.back()) b = static_cast<uint8_t>(rng());
  }
  return bits;
}

bool same_rows(const Region& a, const Region& b) {
  for (uint64_t r = 0; r < a.box.rows; ++r) {
    if (std::memcmp(a.row(r), b.row(r), a.box.cols * a.width) != 0) return false;
  }
  return a.width == b.width;
}

TEST(ShardView, RegionsAndPromotionEqualALoadedShard) {
  const Manifest m = tiny_model();
  const ModelRules rules = rules_of(m, "conv\\.weight");
  const CanonicalBits bits = random_bits(m);
  const TensorBytes canonical = [&bits](uint32_t t) { return bits[t].data(); };
  for (const TrainingLayout& layout : {TrainingLayout{1, 1}, TrainingLayout{2, 1}, TrainingLayout{3, 2}}) {
    TrainingLayout l = layout;
    l.rules = &rules;
    for (int rank = 0; rank < l.fsdp * l.tp; ++rank) {
      SCOPED_TRACE("fsdp " + std::to_string(l.fsdp) + " tp " + std::to_string(l.tp) + " rank " + std::to_string(rank));
      Holdings h;
      ASSERT_TRUE(training_holdings(m, l, rank, &h).is_ok());
      Shard loaded(m, h), view = Shard::view(m, h, canonical);
      loaded.load(canonical);
      for (const LocalPiece& p : h.pieces) {
        Region a, b;
        ASSERT_TRUE(loaded.region(p.box, &a).is_ok());
        ASSERT_TRUE(view.region(p.box, &b).is_ok());
        EXPECT_TRUE(same_rows(a, b)) << p.box.describe();
      }
      Shard promoted(m, h);
      promoted.copy_from(view);
      for (size_t b = 0; b < h.buffer_names.size(); ++b) {
        ASSERT_EQ(promoted.buffer_bytes(b), loaded.buffer_bytes(b));
        EXPECT_EQ(std::memcmp(promoted.buffer(b), loaded.buffer(b), loaded.buffer_bytes(b)), 0) << h.buffer_names[b];
      }
    }
  }
}

}  // namespace
}  // namespace dcr
