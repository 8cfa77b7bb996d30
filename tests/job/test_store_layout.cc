// What a publisher and its followers share in the store besides the versions: LAYOUT (the layout
// both agree on, and the publication's id fixed by its first publisher, MAC'd under a key) and
// CLOSED (the last version, sealed): a second put keeps the id, another layout is refused, a
// follower learns the id; a garbage, foreign or forged CLOSED is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dcr/auth/keyring.h"
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
  const nlohmann::json layout_ = {{"format", "test"}, {"rollout_tp", 2}};
};

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST_F(StoreLayoutTest, TheFirstPublisherFixesTheIdAndEveryOneAfterKeepsIt) {
  FrameSpool spool(dir_);
  const Keyring keys = ring(1);
  std::string first, again, followed;
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &first).is_ok());
  EXPECT_EQ(first.size(), 32u);
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &again).is_ok());
  EXPECT_EQ(again, first);
  ASSERT_TRUE(check_layout(spool, &keys, layout_, &followed).is_ok());
  EXPECT_EQ(followed, first);
  const Status other = check_layout(spool, &keys, {{"format", "test"}, {"rollout_tp", 4}}, &followed);
  EXPECT_EQ(other.code(), Code::invalid_argument);
  EXPECT_TRUE(mentions(other, "rollout_tp: store 2, this job 4")) << other.message();
}

TEST_F(StoreLayoutTest, ALayoutAlteredOrWithoutItsMacIsRefusedUnderAKey) {
  FrameSpool spool(dir_);
  const Keyring keys = ring(1), wrong = ring(2);
  std::string id;
  ASSERT_TRUE(put_layout(spool, nullptr, layout_, &id).is_ok());  // written without a key
  EXPECT_TRUE(mentions(check_layout(spool, &keys, layout_, &id), "not authenticated")) << "no mac";
  fs::remove(dir_ + "/LAYOUT");
  ASSERT_TRUE(put_layout(spool, &keys, layout_, &id).is_ok());
  EXPECT_EQ(check_layout(spool, &wrong, layout_, &id).code(), Code::corrupt);
  std::string text = text_of("LAYOUT");
  text.replace(text.find(id), 32, std::string(32, 'f'));  // another publication's id, same tag
  write("LAYOUT", text);
  const Status st = check_layout(spool, &keys, layout_, &id);
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
