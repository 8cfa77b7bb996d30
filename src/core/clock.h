// Internal: the two clocks dcr reads. Durations come from the steady clock; a time another process
// or host compares (a manifest's "published" line, a follower's lag) from the wall clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace dcr {

using Clock = std::chrono::steady_clock;

// Seconds since `start` on the steady clock.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Wall-clock time in microseconds since the Unix epoch.
inline uint64_t unix_micros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace dcr
