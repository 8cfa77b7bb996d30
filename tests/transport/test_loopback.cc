// The shared transport suite (tests/mpi/transport_suite.h) on loopback groups of threads, plus the
// loopback- and factory-specific checks. No MPI.
#include <gtest/gtest.h>

#include "support/thread_barrier.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "mpi/transport_suite.h"

namespace dcr {
namespace {

using test::ThreadBarrier;

// Runs `run` on every rank of a fresh loopback group of `size`, one thread per rank.
void run_on_group(int size, void (*run)(Transport&, const test::Barrier&)) {
  std::vector<std::unique_ptr<Transport>> group = make_loopback_group(size);
  ThreadBarrier barrier(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] { run(*group[r], [&] { barrier.wait(); }); });
  for (std::thread& t : threads) t.join();
}

class LoopbackSuite : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(LoopbackSuite, Case) {
  const auto [size, index] = GetParam();
  run_on_group(size, test::suite_cases()[index].run);
}

INSTANTIATE_TEST_SUITE_P(
    Groups, LoopbackSuite,
    ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Range<size_t>(0, test::suite_cases().size())),
    [](const ::testing::TestParamInfo<LoopbackSuite::ParamType>& info) {
      return std::string(test::suite_cases()[std::get<1>(info.param)].name) + "_np" +
             std::to_string(std::get<0>(info.param));
    });

TEST(Loopback, GroupRanksAndName) {
  auto group = make_loopback_group(3);
  ASSERT_EQ(group.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(group[r]->rank(), r);
    EXPECT_EQ(group[r]->size(), 3);
    EXPECT_EQ(group[r]->name(), "loopback");
  }
}

TEST(RateLimit, RejectsImpossibleLimits) {
  auto group = make_loopback_group(2);
  RateLimitedTransport zero(group[0].get(), RateLimit{0, 1024, {}});
  Status s = zero.send(1, 1, test::pattern_message(10, 1));
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  RateLimitedTransport outside(group[0].get(), RateLimit{1e6, 1024, {5}});
  s = outside.send(1, 1, test::pattern_message(10, 1));
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("rank 5"), std::string::npos) << s.message();
}

TEST(RateLimit, UnlimitedPeersPassStraightThrough) {
  auto group = make_loopback_group(3);
  // 1 byte/s to rank 1, no burst: both messages wait for the link to carry them.
  RateLimitedTransport limited(group[0].get(), RateLimit{1.0, 0, {1}});
  ASSERT_TRUE(limited.send(1, 4, test::pattern_message(1000, 3)).is_ok());
  ASSERT_TRUE(limited.send(1, 4, test::pattern_message(1000, 4)).is_ok());
  ASSERT_TRUE(limited.send(2, 4, test::pattern_message(1000, 2)).is_ok());
  EXPECT_EQ(limited.sends_in_flight(), 2u);
  EXPECT_EQ(limited.peers_with_sends_in_flight(), std::vector<int>{1});
  Message m;
  ASSERT_TRUE(group[2]->receive(0, 4, &m, 1.0).is_ok());
  EXPECT_EQ(m.bytes, test::pattern(1000, 2));
  const Status s = limited.wait_sends(0.1);
  EXPECT_EQ(s.code(), Code::unavailable);
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
}

// A message arrives no sooner than the emulated link could carry it: after the burst, every byte
// of it and of those ahead of it takes its 1/rate (a lower bound on elapsed time only).
TEST(RateLimit, MessagesArriveOnlyOnceTheLinkHasCarriedThem) {
  auto group = make_loopback_group(2);
  constexpr double kRate = 4e6;
  constexpr size_t kBurst = 64 << 10, kMessage = 300 << 10;
  RateLimitedTransport limited(group[0].get(), RateLimit{kRate, kBurst, {1}});
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limited.send(1, 7, test::pattern_message(kMessage, i)).is_ok());
  for (int i = 0; i < 3; ++i) {
    Message m;
    bool received = false;
    while (!received) {
      ASSERT_TRUE(limited.progress().is_ok());
      ASSERT_TRUE(group[1]->try_receive(0, 7, &m, &received).is_ok());
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(elapsed, ((i + 1) * kMessage - kBurst) / kRate) << "message " << i;
    EXPECT_EQ(m.bytes, test::pattern(kMessage, i));
  }
}

TEST(Factory, UnknownNameAndMissingMpiAreClearErrors) {
  std::unique_ptr<Transport> t;
  const Status s = make_transport("carrier-pigeon", MPI_COMM_WORLD, &t);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("carrier-pigeon"), std::string::npos) << s.message();
  EXPECT_EQ(t, nullptr);
  const Status without_mpi = make_transport("ucx", MPI_COMM_WORLD, &t);
  EXPECT_EQ(without_mpi.code(), Code::invalid_argument);
  EXPECT_NE(without_mpi.message().find("MPI_Init"), std::string::npos) << without_mpi.message();
}

}  // namespace
}  // namespace dcr
