// What a publisher and its followers share in the store besides the versions: LAYOUT (the
// publication's description and its id fixed by its first publisher, MAC'd under a key) and CLOSED
// (the last version, sealed): a second put keeps the id, another promise is refused, a follower
// takes the publication from it; a garbage, foreign or forged CLOSED is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dcr/auth/keyring.h"
#include "dcr/model/presets.h"
#include "dcr/refit/topology.h"
#include "src/job/store_layout.h"
#include "support/scratch_dir.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

Keyring ring(uint8_t fill) {
  Key k;
  k.id = 3;
  k.bytes.fill(fill);
  return Keyring::of({k});
}

// The description a publisher of `tiny` (2 trainers) promising TP `tps` would put.
nlohmann::json publication_of(std::vector<int> tps) {
  RefitOptions o;
  o.role = JobRole::publish;
  o.serve_tp = std::move(tps);
  Topology t;
  EXPECT_TRUE(make_topology_from_nodes(o, 0, {0, 0}, &t).is_ok());
  RefitPlan plan;
  EXPECT_TRUE(make_preset("tiny", &plan.model).is_ok());
  EXPECT_TRUE(make_plan(o, t, &plan).is_ok());
  return store_layout(o, plan);
}

class StoreLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir("dcr-store-layout");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string text_of(const std::string& key) {
    std::ifstream in(dir_ + "/" + key);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void write(const std::string& key, const std::string& text) { std::ofstream(dir_ + "/" + key, std::ios::trunc) << text; }

  std::string dir_;
  const nlohmann::json layout_ = publication_of({1, 2, 4});
};

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST_F(StoreLayoutTest, TheFirstPublisherFixesTheIdAndEveryOneAfterKeepsIt) {
  FrameSpool spool(dir_);
  const Keyring keys = ring(1);
  std::string first, again;
  nlohmann::json followed;
  EXPECT_EQ(read_layout(spool, &keys, &followed).code(), Code::not_found);
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &first).is_ok());
  EXPECT_EQ(first.size(), 32u);
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &again).is_ok());
  EXPECT_EQ(again, first);
  ASSERT_TRUE(read_layout(spool, &keys, &followed).is_ok());
  EXPECT_EQ(followed["publication"], first);
  const Status other = put_layout(spool, &keys, publication_of({2}), &again);
  EXPECT_EQ(other.code(), Code::invalid_argument);
  EXPECT_TRUE(mentions(other, "serve_tp: store [1,2,4], this job [2]")) << other.message();
}

// A follower takes the publication's options and model from LAYOUT alone; a layout it does not
// promise, or another served form, is refused naming what it does promise.
TEST_F(StoreLayoutTest, AFollowerTakesThePublicationAndNeedsAPromisedLayout) {
  RefitOptions mine;
  mine.role = JobRole::follow;
  mine.trainers = 7;  // the publication's 2 win
  mine.rollout_tp = 4;
  RefitPlan plan;
  ASSERT_TRUE(adopt_layout(layout_, "file:///s", &mine, &plan).is_ok());
  EXPECT_EQ(mine.trainers, 2);
  EXPECT_EQ(mine.serve_tp, (std::vector<int>{1, 2, 4}));
  Manifest tiny;
  ASSERT_TRUE(make_preset("tiny", &tiny).is_ok());
  EXPECT_EQ(plan.model.hash(), tiny.hash());
  EXPECT_FALSE(plan.family_text.empty());
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(mine, 0, std::vector<int>(5, 0), &t).is_ok());
  ASSERT_TRUE(make_plan(mine, t, &plan).is_ok());
  EXPECT_TRUE(check_plan(layout_, plan).is_ok());

  RefitOptions eight;
  eight.rollout_tp = 8;
  const Status unpromised = adopt_layout(layout_, "file:///s", &eight, &plan);
  EXPECT_EQ(unpromised.code(), Code::invalid_argument);
  EXPECT_TRUE(mentions(unpromised, "promises the serving layouts TP 1, TP 2, TP 4; this follow job's TP 8")) << unpromised.message();
  EXPECT_TRUE(mentions(unpromised, "--serve-tp")) << unpromised.message();
  RefitOptions fp8;
  fp8.rollout_tp = 2;
  fp8.serve_quant = ServeQuant::fp8_block;
  EXPECT_TRUE(mentions(adopt_layout(layout_, "file:///s", &fp8, &plan), "publishes the served form --serve-quant none"));
  nlohmann::json damaged = layout_;
  damaged["tensors"][0]["shape"] = {3};
  EXPECT_TRUE(mentions(adopt_layout(damaged, "file:///s", &mine, &plan), "do not hash to its \"model\""));
}

TEST_F(StoreLayoutTest, ALayoutAlteredOrWithoutItsMacIsRefusedUnderAKey) {
  FrameSpool spool(dir_);
  const Keyring keys = ring(1), wrong = ring(2);
  std::string id;
  nlohmann::json read;
  ASSERT_TRUE(put_layout(spool, nullptr, layout_, &id).is_ok());  // written without a key
  EXPECT_TRUE(mentions(read_layout(spool, &keys, &read), "not authenticated")) << "no mac";
  fs::remove(dir_ + "/LAYOUT");
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &id).is_ok());
  EXPECT_EQ(read_layout(spool, &wrong, &read).code(), Code::corrupt);
  std::string text = text_of("LAYOUT");
  text.replace(text.find(id), 32, std::string(32, 'f'));  // another publication's id, same tag
  write("LAYOUT", text);
  const Status st = read_layout(spool, &keys, &read);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_TRUE(mentions(st, "tag does not match")) << st.message();
}

TEST_F(StoreLayoutTest, ClosedIsSealedAndRefusedWhenGarbageForeignOrForged) {
  FrameSpool spool(dir_);
  spool.set_publication(std::string(32, 'a'));
  const Keyring keys = ring(1).for_publication(spool.publication());
  uint64_t last = 0;
  ASSERT_TRUE(read_closed(spool, &keys, &last).is_ok());
  EXPECT_EQ(last, kNoVersion);
  ASSERT_TRUE(put_closed(spool, &keys, 7).is_ok());
  ASSERT_TRUE(read_closed(spool, &keys, &last).is_ok());
  EXPECT_EQ(last, 7u);

  FrameSpool foreign(dir_);
  foreign.set_publication(std::string(32, 'b'));
  EXPECT_TRUE(mentions(read_closed(foreign, nullptr, &last), "belongs to publication"));
  const Keyring wrong = ring(2).for_publication(spool.publication());
  EXPECT_TRUE(mentions(read_closed(spool, &wrong, &last), "tag does not match"));

  const std::string sealed = text_of("CLOSED");
  write("CLOSED", "garbage\n");
  const Status garbage = read_closed(spool, nullptr, &last);
  EXPECT_EQ(garbage.code(), Code::corrupt);
  EXPECT_TRUE(mentions(garbage, "CLOSED' is not a close record")) << garbage.message();
  write("CLOSED", sealed.substr(0, sealed.size() / 2));
  EXPECT_EQ(read_closed(spool, nullptr, &last).code(), Code::corrupt);
}

}  // namespace
}  // namespace dcr
