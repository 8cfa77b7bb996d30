// The CPU block-FP8 quantizer (dcr/layout/fp8_block.h) against memcpy on one core: what a trainer
// spends per version quantizing its shard under --serve-quant fp8-block. A bf16 matrix of N(0,
// std) weights; each repetition times, in turn and each from cold caches, a memcpy of the matrix
// and quantize_fp8_block of it, after one repetition that runs and is dropped. GB/s are bf16 bytes
// per second (medians); the ratio is each repetition's quantize speed over its memcpy's (median
// [min-max]), so a machine that slows down mid-run moves both sides together.
// Usage: build/dcr_fp8_quantize [--rows 8192] [--cols 8192] [--reps 7] [--std 0.02]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dcr/core/dtype.h"
#include "dcr/layout/fp8_block.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Reads 256 MiB so the next pass starts with the matrix out of the caches.
void evict_caches() {
  static std::vector<uint8_t> evict(256u << 20, 1);
  static volatile uint64_t sink = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < evict.size(); i += 64) sum += evict[i]++;
  sink = sink + sum;
}

template <typename Pass>
double timed(Pass&& pass) {
  evict_caches();
  const auto start = Clock::now();
  pass();
  return seconds_since(start);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 8192, cols = 8192;
  int reps = 7;
  float std_dev = 0.02f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--rows") rows = std::strtoull(argv[i + 1], nullptr, 10);
    else if (key == "--cols") cols = std::strtoull(argv[i + 1], nullptr, 10);
    else if (key == "--reps") reps = std::atoi(argv[i + 1]);
    else if (key == "--std") std_dev = std::strtof(argv[i + 1], nullptr);
    else return std::fprintf(stderr, "usage: dcr_fp8_quantize [--rows N] [--cols N] [--reps N] [--std S]\n"), 2;
  }
  if (argc % 2 == 0 || rows == 0 || cols == 0 || reps < 1) {
    return std::fprintf(stderr, "usage: dcr_fp8_quantize [--rows N] [--cols N] [--reps N] [--std S]\n"), 2;
  }
  const uint64_t n = rows * cols, bytes = n * 2;
  std::vector<uint16_t> w(n), copy(n);
  std::vector<uint8_t> e4m3(n, 1);
  std::vector<float> scales(((rows + 127) / 128) * ((cols + 127) / 128));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, std_dev);
  for (uint16_t& x : w) x = dcr::f32_to_bf16_rne(normal(rng));
  std::vector<double> copy_s, quantize_s, ratios;
  for (int rep = 0; rep <= reps; ++rep) {  // repetition 0 is dropped: first touches
    const double c = timed([&] { std::memcpy(copy.data(), w.data(), bytes); });
    bool ok = true;
    const double q = timed([&] { ok = dcr::quantize_fp8_block(w.data(), rows, cols, e4m3.data(), scales.data()).is_ok(); });
    if (!ok) return std::fprintf(stderr, "dcr_fp8_quantize: the quantizer refused the matrix\n"), 1;
    if (rep == 0) continue;
    copy_s.push_back(c);
    quantize_s.push_back(q);
    ratios.push_back(c / q);
  }
  std::printf("bf16 %llu x %llu (%.1f MB), N(0, %g), %d repetitions from cold caches, one core\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols), bytes / 1e6, std_dev, reps);
  std::printf("memcpy    %.2f GB/s\nquantize  %.2f GB/s of bf16 (E4M3 bytes and a scale per 128 x 128 block)\n",
              bytes / median(copy_s) / 1e9, bytes / median(quantize_s) / 1e9);
  std::printf("quantize / memcpy: %.3f [%.3f-%.3f]\n", median(ratios), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()));
  return 0;
}
