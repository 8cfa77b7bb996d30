#include <gtest/gtest.h>

#include <algorithm>

#include "dcr/layout/training_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;

// The FSDP shard of one TP part as a training framework stores it: the part flattened row-major,
// zero-padded to a multiple of fsdp, cut into fsdp equal slices. Replicated tensors are projected by
// their owner, TP rank 0, only.
std::vector<uint64_t> expected_shard(const Manifest& m, const Values& model, uint32_t id, const TrainingLayout& l,
                                     int rank) {
  const int tp_rank = rank / l.fsdp;
  std::vector<uint64_t> part = tp_part_values(m, model, id, l.tp, tp_rank, false);
  const size_t shard = (part.size() + l.fsdp - 1) / l.fsdp;
  if (tp_rank > 0 && split_kind(m.tensors[id]) == 'w') return std::vector<uint64_t>(shard, 0);  // not the owner
  part.resize(shard * l.fsdp, 0);
  const auto begin = part.begin() + static_cast<std::ptrdiff_t>(shard * (rank % l.fsdp));
  return std::vector<uint64_t>(begin, begin + static_cast<std::ptrdiff_t>(shard));
}

void check_round_trip(const Manifest& m, TrainingLayout l) {
  const ModelRules rules = rules_of(m, "conv\\.weight");
  l.rules = &rules;
  SCOPED_TRACE("fsdp " + std::to_string(l.fsdp) + " tp " + std::to_string(l.tp));
  const Values model = numbered_model(m);
  Values rebuilt = zero_model(m), counts = zero_model(m);
  for (int rank = 0; rank < l.fsdp * l.tp; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    Holdings h;
    ASSERT_TRUE(training_holdings(m, l, rank, &h).is_ok());
    ASSERT_EQ(h.buffer_names.size(), m.tensors.size());
    std::vector<int> pieces_of(m.tensors.size(), 0);
    for (const LocalPiece& p : h.pieces) {
      EXPECT_EQ(p.buffer, p.box.tensor) << "one buffer per tensor, in manifest order";
      EXPECT_LE(++pieces_of[p.box.tensor], 3) << m.tensors[p.box.tensor].name;
      count_box(m, p.box, &counts);
    }
    const Values buffers = project(m, model, h);
    for (uint32_t id = 0; id < m.tensors.size(); ++id) {
      EXPECT_EQ(buffers[id], expected_shard(m, model, id, l, rank)) << m.tensors[id].name;
    }
    gather(m, buffers, h, &rebuilt);
  }
  expect_all_counts(m, counts, 1, "trainer coverage");
  EXPECT_EQ(rebuilt, model);
}

const TrainingLayout kLayouts[] = {{1, 1}, {2, 1}, {3, 1}, {5, 1}, {1, 2}, {2, 2}, {3, 2}};

TEST(TrainingLayout, TinyRoundTripsThroughEveryRank) {
  const Manifest m = tiny_model();
  for (const TrainingLayout& l : kLayouts) check_round_trip(m, l);
  check_round_trip(m, TrainingLayout{2, 4});
}

TEST(TrainingLayout, OddSizesRoundTripWithPadding) {
  const Manifest odd = odd_model(7, 3, 11, 13);  // nothing divides: every FSDP degree pads
  for (int fsdp : {1, 2, 3, 4, 5, 8}) check_round_trip(odd, TrainingLayout{fsdp, 1});
  const Manifest even = odd_model(6, 2, 10, 10);  // TP 2 divides, FSDP still pads
  for (const TrainingLayout& l : kLayouts) check_round_trip(even, l);
}

TEST(TrainingLayout, NamesBuffersAndPadsShards) {
  const Manifest m = odd_model(6, 2, 10, 10);
  const ModelRules r = rules_of(m, "conv\\.weight");
  Holdings h;
  ASSERT_TRUE(training_holdings(m, TrainingLayout{4, 2, 1, &r}, 5, &h).is_ok());  // tp rank 1, fsdp rank 1
  const uint32_t o = id_of(m, "layers.0.attn.o.weight");
  EXPECT_EQ(h.buffer_names[o], "layers.0.attn.o.weight#tp1#fsdp1");
  EXPECT_EQ(h.buffer_elements[o], 5u);  // the part is 6 x 3 = 18 elements, padded to 20 over 4 ranks
  // Flat [5, 10) of the column band [3, 6): rows 1..3 of the part, canonical columns from 3.
  std::vector<Box> boxes;
  for (const LocalPiece& p : h.pieces) {
    if (p.box.tensor == o) boxes.push_back(p.box);
  }
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0], (Box{o, 1, 1, 5, 1}));
  EXPECT_EQ(boxes[1], (Box{o, 2, 1, 3, 3}));
  EXPECT_EQ(boxes[2], (Box{o, 3, 1, 3, 1}));
  uint32_t buffer;
  uint64_t offset, pitch;
  ASSERT_TRUE(locate(h, Box{o, 2, 1, 4, 2}, &buffer, &offset, &pitch));
  EXPECT_EQ(offset, 2u);
  EXPECT_EQ(pitch, 3u);

  ASSERT_TRUE(training_holdings(m, TrainingLayout{1, 1, 1, &r}, 0, &h).is_ok());
  EXPECT_EQ(h.buffer_names[0], "embed_tokens.weight#fsdp0");
}

TEST(TrainingLayout, RankInPaddingKeepsAnEmptyBuffer) {
  const Manifest m = odd_model(6, 2, 10, 10);
  const ModelRules r = rules_of(m);
  Holdings h;
  ASSERT_TRUE(training_holdings(m, TrainingLayout{3, 1, 1, &r}, 2, &h).is_ok());
  const uint32_t counter = id_of(m, "step_counter");
  EXPECT_EQ(h.buffer_elements[counter], 1u);
  for (const LocalPiece& p : h.pieces) EXPECT_NE(p.box.tensor, counter);
}


// Pipeline stages and data-parallel replicas: stage s holds its layers (the first also the
// embeddings and the buffers, the last the final norm and the output layer); every replica holds
// the same buffers; one replica's ranks own every element exactly once.
TEST(TrainingLayout, PipelineStagesHoldTheirLayersAndReplicasHoldAlike) {
  const Manifest m = tiny_model();  // 4 layers
  const ModelRules r = rules_of(m);
  for (const std::vector<int>& split : {std::vector<int>{}, std::vector<int>{3, 1}}) {
    TrainingLayout l{1, 2, 1, &r};
    l.pp = 2;
    l.dp = 2;
    l.pp_layers = split;
    const int64_t last_of_stage0 = split.empty() ? 1 : 2;
    Values counts = zero_model(m);
    for (int rank = 0; rank < l.world(); ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const TrainingCoords at = training_coords(l, rank);
      EXPECT_EQ(rank, ((at.pp * l.dp + at.dp) * l.tp + at.tp) * l.fsdp + at.fsdp);
      Holdings h;
      ASSERT_TRUE(training_holdings(m, l, rank, &h).is_ok());
      for (const std::string& name : h.buffer_names) {
        const std::string tensor = name.substr(0, name.find('#'));
        const TensorRule& rule = r.tensors[id_of(m, tensor)];
        const int stage = rule.layer >= 0 ? (rule.layer <= last_of_stage0 ? 0 : 1)
                          : (tensor == "final_norm.weight" || tensor == "lm_head.weight") ? 1 : 0;
        EXPECT_EQ(stage, at.pp) << tensor;
      }
      Holdings replica0;
      ASSERT_TRUE(training_holdings(m, l, rank - at.dp * l.tp * l.fsdp, &replica0).is_ok());
      EXPECT_EQ(h.buffer_names, replica0.buffer_names);
      ASSERT_EQ(h.pieces.size(), replica0.pieces.size());
      for (size_t i = 0; i < h.pieces.size(); ++i) EXPECT_EQ(h.pieces[i].box, replica0.pieces[i].box);
      if (at.dp == 0) {
        for (const LocalPiece& p : h.pieces) count_box(m, p.box, &counts);
      }
    }
    expect_all_counts(m, counts, 1, "one replica's coverage");
  }
}

// Tied embeddings: the first stage owns them, the last keeps them too (a buffer, no pieces).
TEST(TrainingLayout, TiedEmbeddingsAreHeldByBothEndsAndOwnedByTheFirst) {
  Manifest m = tiny_model();
  m.tensors.erase(m.tensors.begin() + id_of(m, "lm_head.weight"));
  ModelFamily family;
  ASSERT_TRUE(load_model_family("dcr", &family).is_ok());
  ModelDims dims;
  dims.tied = true;
  ModelRules r;
  ASSERT_TRUE(resolve_rules(family, dims, m, &r).is_ok());
  TrainingLayout l{1, 1, 1, &r};
  l.pp = 2;
  const uint32_t embed = id_of(m, "embed_tokens.weight");
  for (int rank = 0; rank < 2; ++rank) {
    Holdings h;
    ASSERT_TRUE(training_holdings(m, l, rank, &h).is_ok());
    EXPECT_NE(std::find(h.buffer_names.begin(), h.buffer_names.end(), "embed_tokens.weight#fsdp0"), h.buffer_names.end());
    bool owns = false;
    for (const LocalPiece& p : h.pieces) owns = owns || p.box.tensor == embed;
    EXPECT_EQ(owns, rank == 0);
  }
}

}  // namespace
}  // namespace dcr
