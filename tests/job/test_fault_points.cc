// The test-only --fail-at points the fault and cluster tests are built on.
#include <gtest/gtest.h>

#include "src/job/faults.h"

namespace dcr {
namespace {

TEST(FaultPoints, KillAndStopPointsParse) {
  KillPoint p;
  ASSERT_TRUE(parse_kill_point("rollout:2:apply:3:stop,relay:0:stream:1", &p).is_ok());
  arm_kill_points("/state", &p);
  EXPECT_TRUE(p.armed);
  EXPECT_EQ(p.role, Role::rollout);
  EXPECT_EQ(p.index, 2);
  EXPECT_EQ(p.phase, Phase::apply);
  EXPECT_EQ(p.version, 3u);
  EXPECT_TRUE(p.stop);
  EXPECT_EQ(p.marker, "/state/fail-at-rollout-2-apply-3.fired");
  ASSERT_EQ(p.more.size(), 1u);
  EXPECT_FALSE(p.more[0].stop);
  EXPECT_EQ(p.more[0].role, Role::relay);
}

TEST(FaultPoints, MalformedPointsAreRefusedWithTheirForm) {
  for (const char* bad : {"rollout:2:apply:3:halt", "rollout:2:apply", "rollout:2:apply:3:stop:x", "node:0:apply:1",
                          "rollout:-1:apply:1", "rollout:0:sleep:1"}) {
    KillPoint p;
    const Status s = parse_kill_point(bad, &p);
    ASSERT_FALSE(s.is_ok()) << bad;
    EXPECT_NE(s.message().find("ROLE:INDEX:PHASE:VERSION[:stop]"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace dcr
