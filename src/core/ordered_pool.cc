#include "dcr/core/ordered_pool.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dcr {

namespace {

class OrderedPool {
 public:
  OrderedPool(size_t items, size_t ahead, const PoolWork& work)
      : items_(items), ahead_(std::max<size_t>(ahead, 1)), work_(work), done_(items), results_(items) {}

  void work_loop(int worker) {
    for (;;) {
      size_t item;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || next_ >= items_ || next_ < waited_ + ahead_; });
        if (stop_ || next_ >= items_) return;
        item = next_++;
      }
      Status result = work_(item, worker);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!result.is_ok()) stop_ = true;
        results_[item] = std::move(result);
        done_[item] = 1;
      }
      changed_.notify_all();
    }
  }

  // Waits for item i; its result, or why it will never come.
  Status wait_for(size_t item) {
    std::unique_lock<std::mutex> lock(mutex_);
    waited_ = item;
    changed_.notify_all();
    changed_.wait(lock, [&] { return done_[item] || (stop_ && item >= next_); });
    if (done_[item]) return results_[item];
    for (size_t i = 0; i < next_; ++i) {  // stopped before item started: an earlier failure is why
      if (done_[i] && !results_[i].is_ok()) return results_[i];
    }
    return Status(Code::aborted, "ordered pool stopped");
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
  }

 private:
  const size_t items_, ahead_;
  const PoolWork& work_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t next_ = 0, waited_ = 0;
  bool stop_ = false;
  std::vector<char> done_;
  std::vector<Status> results_;
};

}  // namespace

Status run_ordered(size_t items, int threads, size_t ahead, const PoolWork& work, const PoolTake& take) {
  if (threads <= 1) {
    for (size_t i = 0; i < items; ++i) {
      DCR_TRY(work(i, 0));
      DCR_TRY(take(i));
    }
    return Status::ok();
  }
  OrderedPool pool(items, ahead, work);
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) workers.emplace_back([&pool, w] { pool.work_loop(w); });
  Status status;
  for (size_t i = 0; i < items && status.is_ok(); ++i) {
    status = pool.wait_for(i);
    if (status.is_ok()) status = take(i);
  }
  pool.stop();
  for (std::thread& t : workers) t.join();
  return status;
}

}  // namespace dcr
