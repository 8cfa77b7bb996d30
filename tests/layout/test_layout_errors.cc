#include <gtest/gtest.h>

#include "dcr/layout/serving_layout.h"
#include "dcr/layout/training_layout.h"
#include "layout/layout_support.h"

namespace dcr {
namespace {

using namespace layout_test;

void expect_invalid(const Status& s, const std::vector<std::string>& mentions) {
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  for (const std::string& word : mentions) EXPECT_NE(s.message().find(word), std::string::npos) << s.message();
}

TEST(LayoutErrors, TrainingStageSplitsThatDoNotFitAreRefusedByName) {
  const Manifest m = tiny_model();
  ModelRules r = rules_of(m);
  Holdings h;
  TrainingLayout l{1, 1, 1, &r};
  l.pp = 3;
  expect_invalid(training_holdings(m, l, 0, &h), {"--train-pp 3", "4 layers", "--train-pp-layers"});
  l.pp_layers = {2, 1, 2};
  expect_invalid(training_holdings(m, l, 0, &h), {"add up to the model's 4 layers", "5"});
  l.pp_layers = {2, 2};
  expect_invalid(training_holdings(m, l, 0, &h), {"lists 2 stages", "--train-pp is 3"});
  l.pp = 2;
  l.dp = 0;
  expect_invalid(training_holdings(m, l, 0, &h), {"dp must be at least 1"});
  l.dp = 1;
  r.has_layers = false;
  expect_invalid(training_holdings(m, l, 0, &h), {"no \"layer\" pattern"});
}

TEST(LayoutErrors, TrainingRejectsBadDegreesAndRanks) {
  const Manifest m = tiny_model();
  const ModelRules r = rules_of(m);
  Holdings h;
  // tiny's vocabulary (2048) divides by 4 but not 3; embed_tokens comes first.
  expect_invalid(training_holdings(m, TrainingLayout{1, 3, 1, &r}, 0, &h), {"embed_tokens.weight", "tp 3"});
  expect_invalid(training_holdings(m, TrainingLayout{1, 0, 1, &r}, 0, &h), {"tp", "0"});
  expect_invalid(training_holdings(m, TrainingLayout{0, 1, 1, &r}, 0, &h), {"fsdp", "0"});
  expect_invalid(training_holdings(m, TrainingLayout{2, 2, 1, &r}, 4, &h), {"rank 4", "4"});
  expect_invalid(training_holdings(m, TrainingLayout{2, 2, 1, &r}, -1, &h), {"rank -1"});
  expect_invalid(training_holdings(m, TrainingLayout{2, 2, 3, &r}, 0, &h), {"ep 3", "4 ranks of a stage"});
  expect_invalid(training_holdings(m, TrainingLayout{1, 1, 1, nullptr}, 0, &h), {"no model rules"});
}

TEST(LayoutErrors, ServingRejectsBadDegreesAndRanks) {
  const Manifest m = tiny_model();
  const ModelRules r = rules_of(m);
  Holdings h;
  expect_invalid(serving_holdings(m, ServingLayout{3, true, 1, &r}, 0, &h), {"embed_tokens.weight", "tp 3"});
  expect_invalid(serving_holdings(m, ServingLayout{0, true, 1, &r}, 0, &h), {"tp", "0"});
  expect_invalid(serving_holdings(m, ServingLayout{2, true, 1, &r}, -1, &h), {"rank", "-1"});
  expect_invalid(serving_holdings(m, ServingLayout{4, true, 3, &r}, 0, &h), {"ep 3", "tp 4"});
}

TEST(LayoutErrors, NamesTheTensorThatDoesNotDivide) {
  Holdings h;
  // embed_tokens (12 rows) and q (8 rows) divide by 4, k (3 rows) does not.
  const Manifest m = odd_model(8, 3, 12, 12);
  const ModelRules r = rules_of(m, "conv\\.weight");
  expect_invalid(serving_holdings(m, ServingLayout{4, true, 1, &r}, 0, &h), {"layers.0.attn.k.weight", "tp 4", "rows"});
  // q (8 rows) divides by 4, o (6 columns) does not.
  Manifest o;
  o.tensors = {tensor("layers.0.attn.q.weight", {8, 6}), tensor("layers.0.attn.o.weight", {8, 6})};
  const ModelRules ro = rules_of(o);
  expect_invalid(serving_holdings(o, ServingLayout{4, false, 1, &ro}, 0, &h), {"layers.0.attn.o.weight", "6 columns", "tp 4"});
  expect_invalid(training_holdings(o, TrainingLayout{2, 4, 1, &ro}, 0, &h), {"layers.0.attn.o.weight", "6 columns", "tp 4"});
}

TEST(LayoutErrors, UnmatchedMatricesAreRefusedUnderTensorParallelism) {
  // odd_model's conv.weight (3-D) matches no rule of the dcr family: whole at tp 1, refused at tp 2
  // (naming the tensor and the family file) instead of being copied to every rank.
  const Manifest m = odd_model(6, 2, 10, 10);
  const ModelRules r = rules_of(m);
  Holdings h;
  EXPECT_TRUE(serving_holdings(m, ServingLayout{1, true, 1, &r}, 0, &h).is_ok());
  expect_invalid(serving_holdings(m, ServingLayout{2, true, 1, &r}, 0, &h), {"conv.weight", "dcr.json", "no rule"});
  expect_invalid(training_holdings(m, TrainingLayout{1, 2, 1, &r}, 0, &h), {"conv.weight", "dcr.json"});
  // The scalar "scale" is whole anyway: only tensors of two or more dimensions are refused.
  const ModelRules listed = rules_of(m, "conv\\.weight");
  EXPECT_TRUE(serving_holdings(m, ServingLayout{2, true, 1, &listed}, 0, &h).is_ok());
}

TEST(LayoutErrors, FusedMembersMustShareTheirWidth) {
  Manifest m;
  m.tensors = {tensor("attn.q.weight", {4, 4}), tensor("attn.k.weight", {2, 6}), tensor("attn.v.weight", {2, 4})};
  const ModelRules r = rules_of(m);
  Holdings h;
  expect_invalid(serving_holdings(m, ServingLayout{1, true, 1, &r}, 0, &h), {"attn.k.weight", "attn.qkv"});
  EXPECT_TRUE(serving_holdings(m, ServingLayout{1, false, 1, &r}, 0, &h).is_ok());
}

TEST(LayoutErrors, FusedBufferMissingAMemberIsRefused) {
  Manifest m;
  m.tensors = {tensor("attn.q.weight", {4, 4}), tensor("attn.v.weight", {2, 4})};
  const ModelRules r = rules_of(m);
  Holdings h;
  expect_invalid(serving_holdings(m, ServingLayout{1, true, 1, &r}, 0, &h), {"attn.qkv", "needs 3 tensors"});
}

TEST(LayoutErrors, InvalidManifestIsRejected) {
  Manifest m;
  m.tensors = {tensor("w", {4, 0})};
  const ModelRules r = rules_of(m);
  Holdings h;
  EXPECT_EQ(training_holdings(m, TrainingLayout{1, 1, 1, &r}, 0, &h).code(), Code::invalid_argument);
  EXPECT_EQ(serving_holdings(m, ServingLayout{1, true, 1, &r}, 0, &h).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace dcr
