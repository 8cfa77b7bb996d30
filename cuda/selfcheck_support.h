// What the CUDA self-checks share: checked CUDA calls, device buffers, a seeded generator and
// cudaEvent timing. Test code only (dcr_cuda_selfcheck).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dcr_cuda.h"

namespace selfcheck {

#define CHECK_CUDA(expr)                                                                   \
  do {                                                                                     \
    const cudaError_t check_err_ = (expr);                                                 \
    if (check_err_ != cudaSuccess) {                                                       \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr,                       \
                  cudaGetErrorString(check_err_));                                         \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

#define CHECK_OK(expr)                                                                     \
  do {                                                                                     \
    const dcr::Status check_status_ = (expr);                                              \
    if (!check_status_.is_ok()) {                                                          \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr,                       \
                  check_status_.to_string().c_str());                                      \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 1))); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p); }
  void* p = nullptr;
};

inline void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes != 0) CHECK_CUDA(cudaMemcpy(dst, src, bytes, kind));
}

struct Rng {  // splitmix64
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

inline std::vector<uint8_t> random_bytes(uint64_t bytes, Rng& rng) {
  std::vector<uint8_t> out(bytes);
  for (uint64_t i = 0; i < bytes; i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(out.data() + i, &r, std::min<uint64_t>(8, bytes - i));
  }
  return out;
}

struct Timing {
  const char* name;
  uint64_t bytes;
  float ms;
  double gbps() const { return bytes / (ms * 1e6); }
};

// Median of 10 timed runs of `run` after 2 warm-up runs; `prepare` runs untimed before each.
template <class Prepare, class Run>
float median_ms(cudaStream_t stream, Prepare prepare, Run run) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < 12; ++i) {
    prepare();
    CHECK_CUDA(cudaEventRecord(start, stream));
    run();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 2) times.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return (times[4] + times[5]) / 2;
}

}  // namespace selfcheck
