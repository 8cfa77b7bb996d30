// A directory of the running test's own, under gtest's temporary directory, made fresh and empty:
// tests that run as separate processes (ctest -j) never share one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace dcr::test {

inline std::string scratch_dir(const std::string& prefix) {
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / (prefix + "-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace dcr::test
