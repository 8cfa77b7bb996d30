// The frames a staged rollout holds until the pause (src/refit/frame_stage.h): in memory up to the
// bound, spilled beyond it, given back in arrival order, and a bound with nowhere to spill or a
// spill file that cannot be written refused by name.
#include <gtest/gtest.h>

#include <filesystem>

#include "src/refit/frame_stage.h"
#include "support/scratch_dir.h"

namespace dcr {
namespace {

std::vector<uint8_t> frame(uint8_t fill, size_t bytes) { return std::vector<uint8_t>(bytes, fill); }

// Every frame given back, in order, with whether it was spilled.
std::vector<std::pair<std::vector<uint8_t>, bool>> given_back(FrameStage* stage) {
  std::vector<std::pair<std::vector<uint8_t>, bool>> out;
  std::vector<uint8_t> scratch;
  for (size_t i = 0; i < stage->frames(); ++i) {
    std::vector<uint8_t>* frame = nullptr;
    EXPECT_TRUE(stage->get(i, &scratch, &frame).is_ok());
    out.emplace_back(*frame, stage->spilled(i));
  }
  return out;
}

TEST(StagedFramesTest, HeldInMemoryUpToTheBoundThenSpilledInArrivalOrder) {
  const std::string spill = test::scratch_dir("stage") + "/rank-3.stage";
  FrameStage stage;
  stage.start(250, spill);
  for (uint8_t i = 0; i < 5; ++i) ASSERT_TRUE(stage.add(frame(i, 100 + i)).is_ok());
  EXPECT_EQ(stage.frames(), 5u);
  EXPECT_EQ(stage.memory_bytes(), 201u);  // frames 0 and 1; frame 2 would pass the bound
  EXPECT_EQ(stage.spilled_bytes(), 102u + 103u + 104u);
  EXPECT_TRUE(std::filesystem::exists(spill));
  const auto back = given_back(&stage);
  ASSERT_EQ(back.size(), 5u);
  for (uint8_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back[i].first, frame(i, 100 + i)) << "frame " << int(i);
    EXPECT_EQ(back[i].second, i >= 2) << "frame " << int(i);
  }
  stage.clear();
  EXPECT_FALSE(std::filesystem::exists(spill)) << "the spill file outlived its version";
  EXPECT_EQ(stage.memory_bytes() + stage.spilled_bytes(), 0u);
}

TEST(StagedFramesTest, ABoundOfZeroSpillsEveryFrame) {
  FrameStage stage;
  stage.start(0, test::scratch_dir("stage") + "/s");
  ASSERT_TRUE(stage.add(frame(7, 10)).is_ok());
  EXPECT_TRUE(stage.spills(1));
  EXPECT_EQ(stage.memory_bytes(), 0u);
  EXPECT_EQ(given_back(&stage).at(0).first, frame(7, 10));
}

TEST(StagedFramesTest, BeyondTheBoundWithNowhereToSpillIsRefusedByName) {
  FrameStage stage;
  stage.start(100, "");
  ASSERT_TRUE(stage.add(frame(1, 60)).is_ok());
  const Status st = stage.add(frame(2, 60));
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("--stage-mb"), std::string::npos) << st.message();
}

TEST(StagedFramesTest, ASpillFileThatCannotBeWrittenNamesIt) {
  FrameStage stage;
  const std::string spill = test::scratch_dir("stage") + "/missing/dir/s";
  stage.start(0, spill);
  const Status st = stage.add(frame(1, 10));
  EXPECT_EQ(st.code(), Code::io_error);
  EXPECT_NE(st.message().find(spill), std::string::npos) << st.message();
}

TEST(StagedFramesTest, ASpillFileCutShortIsAnErrorNamingIt) {
  const std::string spill = test::scratch_dir("stage") + "/s";
  FrameStage stage;
  stage.start(0, spill);
  ASSERT_TRUE(stage.add(frame(1, 10)).is_ok());
  ASSERT_TRUE(stage.add(frame(2, 10)).is_ok());
  std::filesystem::resize_file(spill, 15);
  std::vector<uint8_t> scratch;
  std::vector<uint8_t>* back = nullptr;
  EXPECT_TRUE(stage.get(0, &scratch, &back).is_ok());
  const Status st = stage.get(1, &scratch, &back);
  EXPECT_EQ(st.code(), Code::io_error);
  EXPECT_NE(st.message().find("shorter than what was written"), std::string::npos) << st.message();
}

TEST(StagedFramesTest, AStartedStageIsEmptyAndItsOldSpillGone) {
  const std::string dir = test::scratch_dir("stage");
  FrameStage stage;
  stage.start(0, dir + "/a");
  ASSERT_TRUE(stage.add(frame(1, 10)).is_ok());
  stage.start(1000, dir + "/b");
  EXPECT_FALSE(std::filesystem::exists(dir + "/a"));
  EXPECT_EQ(stage.frames(), 0u);
  EXPECT_TRUE(given_back(&stage).empty());
}

}  // namespace
}  // namespace dcr
