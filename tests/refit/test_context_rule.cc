// --contexts auto: contexts where the link is the slowest stage of a trainer's pipeline, by the
// rate given or measured, the encode time on its threads and its share of the apply.
#include <gtest/gtest.h>

#include "src/refit/context_rule.h"

namespace dcr {
namespace {

// A frame of 40,000 changes, 50 kB without contexts, encoded in 1 ms.
const ContextQuestion kFrame{40000, 50e3, 1e-3};

// --contexts as every caller parses it: through the options table.
Status parse_context_mode(const std::string& text, ContextMode* mode) {
  RefitOptions o;
  DCR_TRY(options::set_by_name(refit_option_table(), "contexts", text, &o));
  *mode = o.contexts;
  return Status::ok();
}

TEST(ContextRule, ModesParseAndRefuseOthers) {
  ContextMode m;
  ASSERT_TRUE(parse_context_mode("auto", &m).is_ok());
  EXPECT_EQ(m, ContextMode::automatic);
  ASSERT_TRUE(parse_context_mode("true", &m).is_ok());
  EXPECT_EQ(m, ContextMode::on);
  ASSERT_TRUE(parse_context_mode("false", &m).is_ok());
  EXPECT_EQ(m, ContextMode::off);
  // Only the words the help lists: a switch's other spellings are refused, not guessed.
  for (const char* other : {"sometimes", "1", "yes", "0", "on", ""}) {
    const Status bad = parse_context_mode(other, &m);
    EXPECT_EQ(bad.code(), Code::invalid_argument) << other;
    EXPECT_NE(bad.message().find("auto, true or false"), std::string::npos) << bad.message();
  }
}

TEST(ContextRule, ForcedModesSetTheSwitchWithoutARule) {
  ContextRule rule;
  EncodeOptions o;
  rule.start(ContextMode::on, 0, 1);
  rule.prepare(&o);
  EXPECT_TRUE(o.contexts);
  EXPECT_FALSE(o.context_rule);
  rule.start(ContextMode::off, 0, 1);
  rule.prepare(&o);
  EXPECT_FALSE(o.contexts);
  rule.start(ContextMode::automatic, 0, 1);
  rule.prepare(&o);
  EXPECT_TRUE(o.contexts);
  ASSERT_TRUE(o.context_rule);
  EXPECT_EQ(o.context_rule(kFrame), rule.take(kFrame));
}

TEST(ContextRule, UnknownLinkTakesTheSlowLinkChoice) {
  ContextRule rule;
  rule.start(ContextMode::automatic, 0, 1);
  EXPECT_STREQ(rule.link_source(), "unknown");
  EXPECT_TRUE(rule.take(kFrame));
}

TEST(ContextRule, GivenLinkDecidesByTheBottleneck) {
  ContextRule rule;
  rule.start(ContextMode::automatic, 0.1, 1);  // 50 kB at 12.5 MB/s: 4 ms against 1.5 ms
  EXPECT_STREQ(rule.link_source(), "given");
  EXPECT_TRUE(rule.take(kFrame));
  rule.start(ContextMode::automatic, 5, 1);  // 80 us against 1.5 ms
  EXPECT_FALSE(rule.take(kFrame));
  rule.observe_sends(1000, 10);  // a given rate is not replaced by what sends measure
  EXPECT_DOUBLE_EQ(rule.link_gbps(), 5);
}

TEST(ContextRule, EncodeThreadsShareTheEncodeTime) {
  ContextRule rule;
  rule.start(ContextMode::automatic, 0.25, 1);  // 1.6 ms on the link against 1.5 ms of encode
  EXPECT_TRUE(rule.take(kFrame));
  const ContextQuestion slow{40000, 50e3, 2e-3};
  EXPECT_FALSE(rule.take(slow));
  rule.start(ContextMode::automatic, 0.25, 2);
  EXPECT_TRUE(rule.take(slow));
}

TEST(ContextRule, ApplyBoundVersionsKeepTheFasterCoding) {
  ContextRule rule;
  rule.start(ContextMode::automatic, 0.1, 1);
  // The slowest rollout took 1 s for 400,000 changes of 2 trainers: 5 us a change of one trainer,
  // 0.2 s for this frame against its 4 ms on the link.
  rule.observe_apply(1.0, 400000, 2);
  EXPECT_FALSE(rule.take(kFrame));
  rule.observe_apply(1e-3, 400000, 2);
  EXPECT_TRUE(rule.take(kFrame));
}

TEST(ContextRule, MeasuredRateFromTheSends) {
  ContextRule rule;
  rule.start(ContextMode::automatic, 0, 1);
  rule.observe_sends(12'500'000, 1.0);  // sends held up 1 s for 12.5 MB: 0.1 Gbit/s
  EXPECT_STREQ(rule.link_source(), "measured");
  EXPECT_NEAR(rule.link_gbps(), 0.1, 1e-9);
  EXPECT_TRUE(rule.take(kFrame));
  rule.observe_sends(12'500'000, 0);  // never held up: the link kept up with the encoders
  EXPECT_FALSE(rule.take(kFrame));
}

}  // namespace
}  // namespace dcr
