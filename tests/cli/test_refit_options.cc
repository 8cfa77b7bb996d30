// `dcr refit` options as a user types them: every boolean option takes the bare switch for true
// and still takes an explicit value, on the command line and in an INI file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "src/job/config.h"
#include "src/cli/refit_options.h"

namespace dcr {
namespace {

Status parse(std::vector<std::string> args, RefitConfig* config) {
  args.insert(args.begin(), "refit");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  bool exit_now = false;
  return parse_refit_config(static_cast<int>(argv.size()), argv.data(), config, &exit_now);
}

struct Switch {
  const char* name;
  bool RefitConfig::*field;
};
const Switch kSwitches[] = {{"--fuse", &RefitConfig::fuse},
                            {"--compare-full", &RefitConfig::compare_full},
                            {"--compare-bcast", &RefitConfig::compare_bcast},
                            {"--verify", &RefitConfig::verify}};

TEST(RefitOptions, EveryBareSwitchMeansTrueAndTheNextOptionStillParses) {
  for (const Switch& s : kSwitches) {
    RefitConfig c;
    c.*s.field = false;
    const Status st = parse({s.name, "--steps", "7"}, &c);
    ASSERT_TRUE(st.is_ok()) << s.name << ": " << st.message();
    EXPECT_TRUE(c.*s.field) << s.name;
    EXPECT_EQ(c.steps, 7) << s.name << " swallowed the next option";
  }
}

TEST(RefitOptions, EverySwitchStillTakesAnExplicitValue) {
  for (const Switch& s : kSwitches) {
    for (const char* off : {"false", "0", "off", "no"}) {
      RefitConfig c;
      ASSERT_TRUE(parse({s.name, off}, &c).is_ok()) << s.name << " " << off;
      EXPECT_FALSE(c.*s.field) << s.name << " " << off;
    }
    RefitConfig c;
    ASSERT_TRUE(parse({std::string(s.name) + "=0"}, &c).is_ok()) << s.name;
    EXPECT_FALSE(c.*s.field) << s.name << "=0";
  }
}

TEST(RefitOptions, BareEncryptIsTrueAndNeedsItsKeyFile) {
  // The report that started this: `--encrypt` alone took the next option as its value.
  RefitConfig c;
  const Status without_key = parse({"--encrypt", "--compare-full", "false"}, &c);
  ASSERT_FALSE(without_key.is_ok());
  EXPECT_NE(without_key.message().find("--key-file"), std::string::npos) << without_key.message();
  EXPECT_EQ(without_key.message().find("is invalid"), std::string::npos) << without_key.message();
  RefitConfig d;
  ASSERT_TRUE(parse({"--encrypt", "false", "--compare-full"}, &d).is_ok());
  EXPECT_FALSE(d.encrypt);
  EXPECT_TRUE(d.compare_full);
}

TEST(RefitOptions, AWordThatIsNotABooleanIsRefusedByName) {
  RefitConfig c;
  const Status st = parse({"--verify", "maybe"}, &c);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--verify"), std::string::npos) << st.message();
}

TEST(RefitOptions, IniFileSwitchesTakeTheirValues) {
  const std::string path = ::testing::TempDir() + "/switches.ini";
  std::ofstream(path) << "verify = off\ncompare-full = false\nfuse = 1\n";
  RefitConfig c;
  ASSERT_TRUE(parse({"--config", path, "--compare-bcast"}, &c).is_ok());
  EXPECT_FALSE(c.verify);
  EXPECT_FALSE(c.compare_full);
  EXPECT_TRUE(c.fuse);
  EXPECT_TRUE(c.compare_bcast);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dcr
