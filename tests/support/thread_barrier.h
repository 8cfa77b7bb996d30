// A reusable barrier for `count` threads: in-process ranks (loopback or spool endpoints) meet at it.
#pragma once

#include <condition_variable>
#include <mutex>

namespace dcr::test {

class ThreadBarrier {
 public:
  explicit ThreadBarrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
      return;
    }
    all_arrived_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int count_;
  int arrived_ = 0;
  long generation_ = 0;
};

}  // namespace dcr::test
