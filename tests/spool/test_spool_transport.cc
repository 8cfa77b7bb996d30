// The spool transport without MPI: the shared transport suite (tests/mpi/transport_suite.h) on
// threads, each with its own endpoint over one job directory, and the spool's own checks (files
// as specified, deleted after reading, corrupt or truncated files reported by name). The same
// backend under mpirun runs in tests/mpi (mpi_transport_np3).
#include <gtest/gtest.h>

#include "support/thread_barrier.h"

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "dcr/transport/spool.h"
#include "mpi/transport_suite.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

using test::ThreadBarrier;

std::string fresh_dir(const std::string& name) {
  const std::string dir = (fs::path(::testing::TempDir()) / ("dcr-spool-" + name)).string();
  fs::remove_all(dir);
  return dir;
}

std::vector<std::unique_ptr<Transport>> open_group(const std::string& job, int size) {
  std::vector<std::unique_ptr<Transport>> group(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const Status s = open_spool_endpoint(job, r, size, &group[static_cast<size_t>(r)]);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return group;
}

// Number of regular files under `dir`.
size_t files_under(const std::string& dir) {
  size_t count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) count += entry.is_regular_file();
  return count;
}

class SpoolSuite : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(SpoolSuite, Case) {
  const auto [size, index] = GetParam();
  const std::string job = fresh_dir("suite-" + std::to_string(size) + "-" + std::to_string(index));
  {
    std::vector<std::unique_ptr<Transport>> group = open_group(job, size);
    ThreadBarrier barrier(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] { test::suite_cases()[index].run(*group[r], [&] { barrier.wait(); }); });
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(files_under(job), 0u) << "every message was taken and its file deleted";
  fs::remove_all(job);
}

INSTANTIATE_TEST_SUITE_P(
    Groups, SpoolSuite,
    ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Range<size_t>(0, test::suite_cases().size())),
    [](const ::testing::TestParamInfo<SpoolSuite::ParamType>& info) {
      return std::string(test::suite_cases()[std::get<1>(info.param)].name) + "_np" +
             std::to_string(std::get<0>(info.param));
    });

class SpoolFiles : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }
  void TearDown() override { fs::remove_all(job_); }

  // A fresh job directory and group of 2.
  void reopen() {
    group_.clear();
    job_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    group_ = open_group(job_, 2);
  }

  // Rank 0 sends `bytes` to rank 1 on channel 4; returns the file it became.
  std::string send_one(size_t bytes, uint64_t seed) {
    EXPECT_TRUE(group_[0]->send(1, 4, test::pattern_message(bytes, seed)).is_ok());
    return job_ + "/r1/c4/s0/" + std::string(15, '0') + "0.msg";
  }

  std::string job_;
  std::vector<std::unique_ptr<Transport>> group_;
};

TEST_F(SpoolFiles, MessageIsOneFileUntilReceived) {
  const std::string path = send_one(1000, 1);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 1040u);  // 40-byte header + payload
  EXPECT_EQ(group_[0]->sends_in_flight(), 0u);
  Message m;
  const Status s = group_[1]->receive(0, 4, &m, 1.0);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(m.bytes, test::pattern(1000, 1));
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SpoolFiles, FlippedPayloadByteIsCorruptNamingTheFile) {
  const std::string path = send_one(1000, 2);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(500);
    file.put('\x5a');
  }
  Message m;
  for (uint32_t channel : {4u, kAnyChannel}) {
    const Status s = group_[1]->receive(kAnyPeer, channel, &m, 1.0);
    EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

TEST_F(SpoolFiles, TruncatedFileIsCorruptNamingTheFile) {
  for (uintmax_t keep : {uintmax_t{1020}, uintmax_t{10}}) {
    const std::string path = send_one(1000, 3);
    fs::resize_file(path, keep);
    Message m;
    const Status s = group_[1]->receive(0, 4, &m, 1.0);
    EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    reopen();
  }
}

TEST_F(SpoolFiles, TemporaryFilesAreNotMessages) {
  fs::create_directories(job_ + "/r1/c4/s0");
  std::ofstream(job_ + "/r1/c4/s0/" + std::string(16, '0') + ".msg.tmp") << "partial";
  Message m;
  const Status s = group_[1]->receive(kAnyPeer, kAnyChannel, &m, 0.05);
  EXPECT_EQ(s.code(), Code::unavailable) << s.to_string();
}

}  // namespace
}  // namespace dcr
