#include "src/job/memory_meter.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace dcr {

uint64_t status_bytes(const char* field) {
  const std::string pattern = std::string(field) + ": %llu kB";
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kib = 0;
  while (f && std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, pattern.c_str(), &kib) == 1) break;
  }
  if (f) std::fclose(f);
  return kib * 1024;
}

void MemoryMeter::note(uint64_t bytes) {
  uint64_t seen = peak_.load();
  while (bytes > seen && !peak_.compare_exchange_weak(seen, bytes)) {
  }
}

void MemoryMeter::start(double every_s) {
  stop();
  stopping_ = false;
  peak_ = status_bytes("RssAnon");
  thread_ = std::thread([this, every_s] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(every_s), [this] { return stopping_; })) {
      note(status_bytes("RssAnon"));
    }
  });
}

void MemoryMeter::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t MemoryMeter::take() {
  const uint64_t now = status_bytes("RssAnon");
  note(now);
  return peak_.exchange(now);
}

}  // namespace dcr
