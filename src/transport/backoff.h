// Internal to the transports: how a rank waits for a message without burning a core. After a burst
// of quick polls (yielding), it sleeps, doubling the sleep from `first` up to `longest`; an idle
// receiver then adds at most `longest` of latency.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace dcr {

class Backoff {
 public:
  Backoff(int quick_polls, std::chrono::microseconds first, std::chrono::microseconds longest)
      : quick_polls_(quick_polls), first_(first), longest_(longest) {}

  void idle() {
    if (++polls_ < quick_polls_) {
      std::this_thread::yield();
      return;
    }
    sleep_ = std::min(std::max(2 * sleep_, first_), longest_);
    std::this_thread::sleep_for(sleep_);
  }

 private:
  int quick_polls_;
  std::chrono::microseconds first_, longest_;
  int polls_ = 0;
  std::chrono::microseconds sleep_{0};
};

}  // namespace dcr
