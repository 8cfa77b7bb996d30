// One job per state directory: a rank's lock file is exclusive while held, names its holder in the
// refusal, and is free again once the holder is gone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "src/core/file_lock.h"

namespace dcr {
namespace {

TEST(FileLock, IsExclusiveNamesItsHolderAndIsFreedWithIt) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "dcr-file-lock-test.lock").string();
  std::filesystem::remove(path);
  FileLock first, second;
  ASSERT_TRUE(FileLock::acquire(path, "state directory 'x'", &first).is_ok());
  EXPECT_TRUE(first.held());
  const Status st = FileLock::acquire(path, "state directory 'x'", &second);  // a second open: another holder
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("state directory 'x' is in use by another job"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("pid " + std::to_string(::getpid())), std::string::npos) << st.message();
  first = FileLock();  // released
  EXPECT_TRUE(FileLock::acquire(path, "state directory 'x'", &second).is_ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dcr
