#include "dcr/codec/simd.h"

#include <atomic>

namespace dcr {

namespace {

SimdLevel detect() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd")) {
    const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2");
    return vbmi ? SimdLevel::avx512_vbmi : SimdLevel::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) return SimdLevel::avx2;
#endif
  return SimdLevel::scalar;
}

std::atomic<int> cap{static_cast<int>(SimdLevel::avx512_vbmi)};

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel cpu = detect();
  const int limit = cap.load(std::memory_order_relaxed);
  return static_cast<int>(cpu) < limit ? cpu : static_cast<SimdLevel>(limit);
}

void limit_simd(SimdLevel max) { cap.store(static_cast<int>(max), std::memory_order_relaxed); }

}  // namespace dcr
