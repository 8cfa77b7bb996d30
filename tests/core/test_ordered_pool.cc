#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dcr/core/ordered_pool.h"

namespace dcr {
namespace {

// Items finish out of order (later ones sooner); the taker still sees 0, 1, 2, ... and each item's
// own result.
TEST(OrderedPool, TakesEveryItemInOrderWhateverOrderTheyFinish) {
  for (int threads : {1, 2, 4}) {
    const size_t n = 40;
    std::vector<size_t> made(n, 0), taken;
    std::set<int> workers;
    std::mutex seen;
    const Status s = run_ordered(
        n, threads, 3,
        [&](size_t i, int w) {
          std::this_thread::sleep_for(std::chrono::microseconds(200 * ((n - i) % 5)));
          made[i] = i * i;
          std::lock_guard<std::mutex> lock(seen);
          workers.insert(w);
          return Status::ok();
        },
        [&](size_t i) {
          EXPECT_EQ(made[i], i * i);
          taken.push_back(i);
          return Status::ok();
        });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(taken.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(taken[i], i);
    for (int w : workers) EXPECT_TRUE(w >= 0 && w < threads);
  }
}

// Workers never run more than `ahead` items past the one the taker waits for.
TEST(OrderedPool, WorkersStayWithinTheLookahead) {
  std::atomic<size_t> taken{0};
  std::atomic<size_t> furthest_ahead{0};
  const Status s = run_ordered(
      60, 4, 2,
      [&](size_t i, int) {
        const size_t lead = i - taken.load();
        size_t seen = furthest_ahead.load();
        while (lead > seen && !furthest_ahead.compare_exchange_weak(seen, lead)) {
        }
        return Status::ok();
      },
      [&](size_t i) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        taken = i + 1;
        return Status::ok();
      });
  ASSERT_TRUE(s.is_ok());
  EXPECT_LT(furthest_ahead.load(), 2u);  // items i < waited + ahead
}

// A failed item is returned as it is; items before it are all taken, none after it.
TEST(OrderedPool, FailureStopsTheTakerAtTheFailedItem) {
  for (int threads : {1, 3}) {
    std::vector<size_t> taken;
    const Status s = run_ordered(
        100, threads, 4,
        [](size_t i, int) { return i == 17 ? Status(Code::corrupt, "item 17 is bad") : Status::ok(); },
        [&](size_t i) {
          taken.push_back(i);
          return Status::ok();
        });
    EXPECT_EQ(s.code(), Code::corrupt);
    EXPECT_EQ(s.message(), "item 17 is bad");
    ASSERT_EQ(taken.size(), 17u);
    EXPECT_EQ(taken.back(), 16u);
  }
}

TEST(OrderedPool, TakerFailureEndsTheRun) {
  std::atomic<size_t> started{0};
  size_t taken = 0;
  const Status s = run_ordered(
      1000, 2, 2,
      [&](size_t, int) {
        ++started;
        return Status::ok();
      },
      [&](size_t i) {
        ++taken;
        return i == 5 ? Status(Code::io_error, "link down") : Status::ok();
      });
  EXPECT_EQ(s.code(), Code::io_error);
  EXPECT_EQ(taken, 6u);
  EXPECT_LE(started.load(), 9u);  // item 5 waited for, two more ahead, and what was in flight
}

}  // namespace
}  // namespace dcr
