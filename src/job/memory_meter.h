// Internal to the refit: each rank's peak anonymous memory (RssAnon: heap and anonymous mappings,
// not the checkpoint pages it maps), so that every record says what a refit costs each role in
// memory beside the bytes it holds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace dcr {

// A "<field>: N kB" line of /proc/self/status in bytes ("RssAnon", "VmHWM"); 0 where it is absent.
uint64_t status_bytes(const char* field);

// Samples RssAnon every `every_s` on a thread of its own (20 ms: a 1 GB copy takes longer) and at
// every take().
class MemoryMeter {
 public:
  MemoryMeter() = default;
  MemoryMeter(const MemoryMeter&) = delete;
  MemoryMeter& operator=(const MemoryMeter&) = delete;
  ~MemoryMeter() { stop(); }

  void start(double every_s = 0.02);
  void stop();
  // The peak since the previous take() (or start()); the next peak starts from the present.
  uint64_t take();

 private:
  void note(uint64_t bytes);

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<uint64_t> peak_{0};
};

}  // namespace dcr
