#include <gtest/gtest.h>

#include <tuple>

#include "dcr/layout/frame_plan.h"
#include "dcr/layout/serving_layout.h"
#include "dcr/layout/training_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;

struct Ranks {
  std::vector<Holdings> trainers;
  std::vector<Holdings> serving;
};

// The ranks of both layouts under dcr's own family (odd_model's conv.weight listed as replicated).
Ranks make_ranks(const Manifest& m, TrainingLayout t, ServingLayout s, int replicas) {
  const ModelRules rules = rules_of(m, "conv\\.weight");
  t.rules = s.rules = &rules;
  Ranks ranks;
  ranks.trainers.resize(t.fsdp * t.tp);
  ranks.serving.resize(replicas * s.tp);
  for (size_t r = 0; r < ranks.trainers.size(); ++r) {
    EXPECT_TRUE(training_holdings(m, t, static_cast<int>(r), &ranks.trainers[r]).is_ok());
  }
  for (size_t r = 0; r < ranks.serving.size(); ++r) {
    EXPECT_TRUE(serving_holdings(m, s, static_cast<int>(r), &ranks.serving[r]).is_ok());
  }
  return ranks;
}

void copy_box(const Box& b, const Values& from, const Holdings& from_h, Values* to, const Holdings& to_h) {
  uint32_t src, dst;
  uint64_t src_off, src_pitch, dst_off, dst_pitch;
  ASSERT_TRUE(locate(from_h, b, &src, &src_off, &src_pitch));
  ASSERT_TRUE(locate(to_h, b, &dst, &dst_off, &dst_pitch));
  for (uint64_t r = 0; r < b.rows; ++r) {
    for (uint64_t c = 0; c < b.cols; ++c) {
      (*to)[dst][dst_off + r * dst_pitch + c] = from[src][src_off + r * src_pitch + c];
    }
  }
}

// Plans every trainer's frames and checks them; then sends each frame from its trainer's buffers to
// its receivers, which must end with their buffers equal to the loaded model. Returns all frames.
std::vector<Box> check_plan(const Manifest& m, const TrainingLayout& t, const ServingLayout& s, uint64_t max_elements) {
  SCOPED_TRACE("fsdp " + std::to_string(t.fsdp) + " tp " + std::to_string(t.tp) + " -> serving tp " +
               std::to_string(s.tp) + ", max " + std::to_string(max_elements));
  const Ranks ranks = make_ranks(m, t, s, 2);
  const Values model = numbered_model(m);
  Values counts = zero_model(m);
  std::vector<Values> received;
  for (const Holdings& h : ranks.serving) received.push_back(project(m, zero_model(m), h));
  std::vector<Box> all;
  for (const Holdings& trainer : ranks.trainers) {
    std::vector<Box> frames;
    EXPECT_TRUE(plan_frames(m, trainer, ranks.serving, max_elements, &frames).is_ok());
    const Values sent = project(m, model, trainer);
    for (size_t i = 0; i < frames.size(); ++i) {
      const Box& f = frames[i];
      EXPECT_FALSE(f.empty());
      EXPECT_LE(f.elements(), max_elements) << f.describe();
      if (i > 0) {
        const Box& p = frames[i - 1];
        EXPECT_LT(std::tie(p.tensor, p.row0, p.col0), std::tie(f.tensor, f.row0, f.col0)) << "order";
      }
      uint32_t buffer;
      uint64_t offset, pitch;
      EXPECT_TRUE(locate(trainer, f, &buffer, &offset, &pitch)) << "not in one trainer piece: " << f.describe();
      for (size_t r = 0; r < ranks.serving.size(); ++r) {
        const bool whole = locate(ranks.serving[r], f, &buffer, &offset, &pitch);
        EXPECT_TRUE(whole || !touches(ranks.serving[r], f)) << "rank " << r << " holds part of " << f.describe();
      }
      count_box(m, f, &counts);
      for (int r : receivers(f, ranks.serving)) copy_box(f, sent, trainer, &received[r], ranks.serving[r]);
    }
    all.insert(all.end(), frames.begin(), frames.end());
  }
  expect_all_counts(m, counts, 1, "frames");
  for (size_t r = 0; r < ranks.serving.size(); ++r) {
    EXPECT_EQ(received[r], project(m, model, ranks.serving[r])) << "serving rank " << r;
  }
  return all;
}

const TrainingLayout kTrainers[] = {{1, 1}, {2, 1}, {3, 1}, {2, 2}};

TEST(FramePlan, TinyFramesPartitionTheModelAndApplyWhole) {
  const Manifest m = tiny_model();
  for (const TrainingLayout& t : kTrainers) {
    for (int tp : {1, 2, 4}) {
      for (uint64_t max : {uint64_t{1} << 40, uint64_t{5000}, uint64_t{100}}) check_plan(m, t, ServingLayout{tp}, max);
    }
  }
}

TEST(FramePlan, OddModelFramesPartitionTheModelAndApplyWhole) {
  const Manifest m = odd_model(6, 2, 10, 10);
  const TrainingLayout trainers[] = {{1, 1}, {3, 1}, {5, 1}, {3, 2}};
  for (const TrainingLayout& t : trainers) {
    for (int tp : {1, 2}) {
      for (uint64_t max : {1000, 7, 1}) check_plan(m, t, ServingLayout{tp, false}, max);
    }
  }
  const Manifest odd = odd_model(7, 3, 11, 13);
  for (int fsdp : {2, 3, 4}) check_plan(odd, TrainingLayout{fsdp, 1}, ServingLayout{1}, 5);
}

TEST(FramePlan, FsdpToTensorParallelCutsRowParallelByColumns) {
  const Manifest m = tiny_model();
  const std::vector<Box> frames = check_plan(m, TrainingLayout{2, 1}, ServingLayout{2}, uint64_t{1} << 40);
  int cut = 0;
  for (const Box& f : frames) {
    if (split_kind(m.tensors[f.tensor]) != 'c') continue;
    EXPECT_EQ(f.cols, tensor_cols(m.tensors[f.tensor]) / 2) << f.describe();
    ++cut;
  }
  EXPECT_EQ(cut, 4 * 2 * 2 * 2);  // 4 layers x {o, down} x 2 column bands x 2 FSDP halves
}

TEST(FramePlan, FramesAreAsLargeAsTheLayoutsAllow) {
  const Manifest m = tiny_model();
  int whole = 0, split = 0;
  for (const TensorDesc& t : m.tensors) (split_kind(t) == 'w' ? whole : split)++;
  const uint64_t unlimited = uint64_t{1} << 40;
  EXPECT_EQ(check_plan(m, TrainingLayout{1, 1}, ServingLayout{1}, unlimited).size(), m.tensors.size());
  EXPECT_EQ(check_plan(m, TrainingLayout{1, 1}, ServingLayout{4}, unlimited).size(), whole + 4u * split);
  // Same TP degree on both sides: one frame per tensor part; replicated tensors go from TP rank 0 only.
  EXPECT_EQ(check_plan(m, TrainingLayout{1, 2}, ServingLayout{2}, unlimited).size(), whole + split * 2u);
  // A 192-wide row and a 100-element limit: each row goes out as 100 + 92.
  const uint32_t q = id_of(m, "layers.0.attn.q.weight");
  int q_frames = 0;
  for (const Box& f : check_plan(m, TrainingLayout{1, 1}, ServingLayout{1}, 100)) {
    if (f.tensor != q) continue;
    EXPECT_EQ(f.rows, 1u);
    EXPECT_EQ(f.cols, f.col0 == 0 ? 100u : 92u);
    ++q_frames;
  }
  EXPECT_EQ(q_frames, 2 * 192);
  // A 5000-element limit on 192-wide rows: 26 rows a frame.
  for (const Box& f : check_plan(m, TrainingLayout{1, 1}, ServingLayout{1}, 5000)) {
    if (f.tensor == q) {
      EXPECT_EQ(f.rows, f.row0 == 182 ? 10u : 26u);
    }
  }
}

TEST(FramePlan, ReceiversAreTheRanksHoldingTheFrame) {
  const Manifest m = tiny_model();
  const Ranks ranks = make_ranks(m, TrainingLayout{1, 1}, ServingLayout{2}, 2);
  const uint32_t q = id_of(m, "layers.0.attn.q.weight"), norm = id_of(m, "final_norm.weight");
  EXPECT_EQ(receivers(Box{q, 0, 96, 0, 192}, ranks.serving), (std::vector<int>{0, 2}));
  EXPECT_EQ(receivers(Box{q, 96, 1, 0, 1}, ranks.serving), (std::vector<int>{1, 3}));
  EXPECT_EQ(receivers(Box{norm, 0, 1, 0, 192}, ranks.serving), (std::vector<int>{0, 1, 2, 3}));
}

TEST(FramePlan, RejectsZeroLimitAndForeignPieces) {
  const Manifest m = tiny_model();
  const Ranks ranks = make_ranks(m, TrainingLayout{1, 1}, ServingLayout{1}, 1);
  std::vector<Box> frames;
  EXPECT_EQ(plan_frames(m, ranks.trainers[0], ranks.serving, 0, &frames).code(), Code::invalid_argument);
  Holdings bad = ranks.trainers[0];
  bad.pieces[0].box.rows += 1;
  const Status s = plan_frames(m, bad, ranks.serving, 1000, &frames);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("embed_tokens.weight"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dcr
