// dcr_cuda_selfcheck: checks DeviceDelta::diff and ::apply against the CPU reference (scan_changes,
// gather_words, scatter_swap) and quantize_fp8_block against the CPU's block-FP8 rule
// (selfcheck_fp8.cu) byte for byte, then benchmarks them on 1 GiB of bf16 beside a
// device-to-device cudaMemcpy. Exits 0 when all matches, 1 on the first mismatch or error, and
// without a device 0 (77 with --require-gpu) after printing why it skipped.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dcr/codec/scan.h"
#include "dcr_cuda.h"
#include "selfcheck_fp8.h"
#include "selfcheck_support.h"

namespace {

using dcr::ValueMode;
using namespace selfcheck;

const char* const kModeNames[] = {"xor_mask", "overwrite", "delta_sm", "delta_tc"};

// A copy of `base` where each element changes with probability `fraction` (every one at 1.0) to
// another bit pattern; returns the number changed.
uint64_t make_target(const std::vector<uint8_t>& base, uint64_t n, unsigned w, double fraction,
                     Rng& rng, std::vector<uint8_t>* target) {
  *target = base;
  const uint64_t threshold =
      fraction < 1.0 ? static_cast<uint64_t>(fraction * 18446744073709551616.0) : 0;
  uint64_t changed = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (fraction < 1.0 && rng.next() >= threshold) continue;
    const uint64_t flip = std::max<uint64_t>(rng.next() & dcr::width_mask(w), 1);
    dcr::store_word(target->data(), i, w, dcr::load_word(base.data(), i, w) ^ flip);
    ++changed;
  }
  return changed;
}

// Bit patterns that stress sign-magnitude arithmetic: signed zeros, smallest and largest
// magnitudes, all ones, and infinities and NaNs with payloads in every float layout of the width.
std::vector<uint64_t> special_patterns(unsigned w) {
  const uint64_t sign = dcr::sign_bit(w), mask = dcr::width_mask(w);
  std::vector<uint64_t> v = {0, sign, 1, sign | 1, sign - 1, mask, mask - 1};
  const std::vector<unsigned> exponents = w == 1   ? std::vector<unsigned>{4, 5}
                                          : w == 2 ? std::vector<unsigned>{5, 8}
                                          : w == 4 ? std::vector<unsigned>{8}
                                                   : std::vector<unsigned>{11};
  for (unsigned e : exponents) {
    const unsigned mantissa = 8 * w - 1 - e;
    const uint64_t inf = ((1ull << e) - 1) << mantissa;
    const uint64_t quiet = 1ull << (mantissa - 1);
    for (uint64_t p : {inf, inf | 1, inf | quiet, inf | quiet | 1, inf | (quiet - 1)}) {
      v.push_back(p);
      v.push_back(p | sign);
    }
  }
  return v;
}

// Element i where a and b (arrays of n elements of w bytes) first differ; n when none.
uint64_t first_difference(const void* a, const void* b, uint64_t n, unsigned w) {
  if (n == 0 || std::memcmp(a, b, n * w) == 0) return n;
  uint64_t i = 0;
  while (dcr::load_word(a, i, w) == dcr::load_word(b, i, w)) ++i;
  return i;
}

template <class T>
bool same(const char* what, const std::string& name, const T* want, const T* got, uint64_t n) {
  const uint64_t i = first_difference(want, got, n, sizeof(T));
  if (i == n) return true;
  std::printf("MISMATCH %s: %s[%llu] want 0x%llx, got 0x%llx\n", name.c_str(), what,
              (unsigned long long)i, (unsigned long long)want[i], (unsigned long long)got[i]);
  return false;
}

// Checks diff and apply for every mode on elements [offset, n) of one data set. The device arrays
// come from cudaMalloc, so offset 0 takes the 16-byte vector path and offset 1 the element path.
bool check_data(dcr::cuda::DeviceDelta& delta, const std::string& label, unsigned w,
                const std::vector<uint8_t>& base, const std::vector<uint8_t>& target, uint64_t n,
                uint64_t offset) {
  const uint64_t count = n - offset;
  const size_t bytes = count * w;
  const uint8_t* h_base = base.data() + offset * w;
  const uint8_t* h_target = target.data() + offset * w;
  DeviceBuffer d_base_n(n * w), d_target_n(n * w), d_dst_n(n * w), d_positions(count * 4),
      d_words(count * 8);
  uint8_t* d_base = d_base_n.as<uint8_t>() + offset * w;
  uint8_t* d_target = d_target_n.as<uint8_t>() + offset * w;
  uint8_t* d_dst = d_dst_n.as<uint8_t>() + offset * w;
  copy(d_base, h_base, bytes, cudaMemcpyHostToDevice);
  copy(d_target, h_target, bytes, cudaMemcpyHostToDevice);

  std::vector<uint32_t> positions(count + dcr::kScanSlack), got_positions(count);
  const uint64_t changed = dcr::scan_changes(h_base, h_target, count, w, positions.data());
  std::vector<uint64_t> words(changed), swapped(changed), got_words(changed);
  std::vector<uint8_t> dst(bytes);
  for (int m = 0; m < dcr::kValueModeCount; ++m) {
    const auto mode = static_cast<ValueMode>(m);
    const std::string name = label + " offset " + std::to_string(offset) + " mode " + kModeNames[m];
    dcr::gather_words(h_base, h_target, w, mode, positions.data(), changed, words.data());

    uint64_t got_changed = ~0ull;
    CHECK_OK(delta.diff(d_base, d_target, count, w, mode, d_positions.as<uint32_t>(),
                        d_words.as<uint64_t>(), &got_changed, nullptr));
    if (got_changed != changed) {
      std::printf("MISMATCH %s: diff found %llu changes, want %llu\n", name.c_str(),
                  (unsigned long long)got_changed, (unsigned long long)changed);
      return false;
    }
    copy(got_positions.data(), d_positions.p, changed * 4, cudaMemcpyDeviceToHost);
    copy(got_words.data(), d_words.p, changed * 8, cudaMemcpyDeviceToHost);
    if (!same("diff position", name, positions.data(), got_positions.data(), changed) ||
        !same("diff word", name, words.data(), got_words.data(), changed)) {
      return false;
    }

    copy(d_dst, d_base, bytes, cudaMemcpyDeviceToDevice);
    CHECK_OK(delta.apply(d_dst, count, w, mode, d_positions.as<uint32_t>(),
                         d_words.as<uint64_t>(), changed, nullptr));
    CHECK_CUDA(cudaDeviceSynchronize());
    copy(dst.data(), d_dst, bytes, cudaMemcpyDeviceToHost);
    copy(got_words.data(), d_words.p, changed * 8, cudaMemcpyDeviceToHost);
    const uint64_t i = first_difference(h_target, dst.data(), count, w);
    if (i != count) {
      std::printf("MISMATCH %s: apply element %llu: base 0x%llx, target 0x%llx, got 0x%llx\n",
                  name.c_str(), (unsigned long long)i,
                  (unsigned long long)dcr::load_word(h_base, i, w),
                  (unsigned long long)dcr::load_word(h_target, i, w),
                  (unsigned long long)dcr::load_word(dst.data(), i, w));
      return false;
    }
    std::vector<uint8_t> ref_dst(h_base, h_base + bytes);
    swapped = words;
    dcr::scatter_swap(ref_dst.data(), count, w, mode, positions.data(), changed, swapped.data());
    if (!same("apply swapped word", name, swapped.data(), got_words.data(), changed)) return false;
  }
  return true;
}

bool run_checks(dcr::cuda::DeviceDelta& delta) {
  const uint64_t sizes[] = {0, 1, 7, 4097, (1ull << 20) + 3, 64ull << 20};
  const double fractions[] = {0, 0.01, 0.03, 1.0};
  Rng rng{1};
  for (unsigned w : {1u, 2u, 4u, 8u}) {
    for (uint64_t n : sizes) {
      // The offset-1 variant is skipped for the largest size to keep the run short.
      const uint64_t max_offset = n > 1 && n <= (1ull << 21) ? 1 : 0;
      for (double f : fractions) {
        const std::vector<uint8_t> base = random_bytes(n * w, rng);
        std::vector<uint8_t> target;
        make_target(base, n, w, f, rng, &target);
        const std::string label = "width " + std::to_string(w) + " n " + std::to_string(n) +
                                  " fraction " + std::to_string(f);
        for (uint64_t offset = 0; offset <= max_offset; ++offset) {
          if (!check_data(delta, label, w, base, target, n, offset)) return false;
        }
      }
      std::printf("ok  width %u  n %-9llu  fractions 0 0.01 0.03 1  all modes\n", w,
                  (unsigned long long)n);
    }
    // Special patterns: each element draws base from the set, and target keeps it (1 in 4) or
    // draws again, so equal, signed-zero and NaN-to-NaN pairs all occur.
    const std::vector<uint64_t> patterns = special_patterns(w);
    const uint64_t n = (1ull << 16) + 5;
    std::vector<uint8_t> base(n * w), target(n * w);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t b = patterns[rng.next() % patterns.size()];
      dcr::store_word(base.data(), i, w, b);
      dcr::store_word(target.data(), i, w,
                      rng.next() % 4 == 0 ? b : patterns[rng.next() % patterns.size()]);
    }
    const std::string label = "width " + std::to_string(w) + " special patterns";
    for (uint64_t offset = 0; offset <= 1; ++offset) {
      if (!check_data(delta, label, w, base, target, n, offset)) return false;
    }
    std::printf("ok  width %u  signed zeros, infinities, NaN payloads  all modes\n", w);
  }
  return true;
}

// `more`: timings of other kernels (block FP8), printed and written with these.
bool benchmark(dcr::cuda::DeviceDelta& delta, const char* json_path, const std::vector<Timing>& more) {
  const unsigned w = 2;
  const uint64_t bytes = 1ull << 30, n = bytes / w;
  const double fraction = 0.03;
  const ValueMode mode = ValueMode::delta_sm;
  Rng rng{7};
  const std::vector<uint8_t> base = random_bytes(bytes, rng);
  std::vector<uint8_t> target;
  const uint64_t expected = make_target(base, n, w, fraction, rng, &target);

  DeviceBuffer d_base(bytes), d_target(bytes), d_dst(bytes), d_positions(n * 4), d_words(n * 8),
      d_words0(expected * 8);
  copy(d_base.p, base.data(), bytes, cudaMemcpyHostToDevice);
  copy(d_target.p, target.data(), bytes, cudaMemcpyHostToDevice);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  uint64_t changed = 0;
  bool counts_ok = true;
  const float diff_ms = median_ms(stream, [] {}, [&] {
    CHECK_OK(delta.diff(d_base.p, d_target.p, n, w, mode, d_positions.as<uint32_t>(),
                        d_words.as<uint64_t>(), &changed, stream));
    counts_ok = counts_ok && changed == expected;
  });
  if (!counts_ok) {
    std::printf("MISMATCH benchmark: diff found %llu changes, want %llu\n",
                (unsigned long long)changed, (unsigned long long)expected);
    return false;
  }
  copy(d_words0.p, d_words.p, expected * 8, cudaMemcpyDeviceToDevice);
  const float apply_ms = median_ms(
      stream,
      [&] {
        CHECK_CUDA(cudaMemcpyAsync(d_dst.p, d_base.p, bytes, cudaMemcpyDeviceToDevice, stream));
        CHECK_CUDA(cudaMemcpyAsync(d_words.p, d_words0.p, expected * 8, cudaMemcpyDeviceToDevice,
                                   stream));
      },
      [&] {
        CHECK_OK(delta.apply(d_dst.p, n, w, mode, d_positions.as<uint32_t>(),
                             d_words.as<uint64_t>(), expected, stream));
      });
  std::vector<uint8_t> dst(bytes);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  copy(dst.data(), d_dst.p, bytes, cudaMemcpyDeviceToHost);
  const uint64_t bad = first_difference(target.data(), dst.data(), n, w);
  if (bad != n) {
    std::printf("MISMATCH benchmark: apply element %llu differs from target\n",
                (unsigned long long)bad);
    return false;
  }
  const float copy_ms = median_ms(stream, [] {}, [&] {
    CHECK_CUDA(cudaMemcpyAsync(d_dst.p, d_base.p, bytes, cudaMemcpyDeviceToDevice, stream));
  });
  CHECK_CUDA(cudaStreamDestroy(stream));

  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::vector<Timing> rows = {{"diff", 2 * bytes, diff_ms}, {"apply", bytes, apply_ms}, {"memcpy_d2d", bytes, copy_ms}};
  rows.insert(rows.end(), more.begin(), more.end());
  std::printf("\nbenchmark on %s: 1 GiB bf16 (%llu elements), %llu changed (3%%), mode %s\n",
              prop.name, (unsigned long long)n, (unsigned long long)expected,
              kModeNames[static_cast<int>(mode)]);
  std::printf("%-11s %12s %10s %10s\n", "op", "bytes", "median ms", "GB/s");
  for (const Timing& t : rows) {
    std::printf("%-11s %12llu %10.3f %10.1f\n", t.name, (unsigned long long)t.bytes, t.ms,
                t.gbps());
  }
  std::printf("(diff bytes: base + target read; apply and memcpy bytes: the array; fp8_quantize bytes: the bf16\n"
              " read (it writes half as many E4M3 bytes and a scale per 128 x 128 block); GB = 1e9 B)\n");
  for (const Timing& t : more) std::printf("%s / memcpy_d2d: %.2f\n", t.name, t.gbps() / (bytes / (copy_ms * 1e6)));

  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    if (f == nullptr) {
      std::printf("FAIL cannot write %s\n", json_path);
      return false;
    }
    std::fprintf(f,
                 "{\n  \"device\": \"%s\",\n  \"dtype\": \"bf16\",\n  \"elements\": %llu,\n"
                 "  \"change_fraction\": %.2f,\n  \"changed\": %llu,\n  \"mode\": \"%s\",\n"
                 "  \"timing\": \"median of 10 after 2 warm-up runs, cudaEvent\"",
                 prop.name, (unsigned long long)n, fraction, (unsigned long long)expected,
                 kModeNames[static_cast<int>(mode)]);
    for (const Timing& t : rows) {
      std::fprintf(f, ",\n  \"%s\": {\"bytes\": %llu, \"median_ms\": %.4f, \"gb_per_s\": %.1f}",
                   t.name, (unsigned long long)t.bytes, t.ms, t.gbps());
    }
    std::fprintf(f, "\n}\n");
    std::fclose(f);
    std::printf("wrote %s\n", json_path);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool require_gpu = false;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--require-gpu") {
      require_gpu = true;
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::printf("usage: dcr_cuda_selfcheck [--require-gpu] [--json PATH]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows even if the run dies
  std::string why;
  if (!dcr::cuda::device_available(&why)) {
    std::printf("dcr_cuda_selfcheck: no CUDA device (%s), skipping\n", why.c_str());
    return require_gpu ? 77 : 0;
  }
  dcr::cuda::DeviceDelta delta;
  const auto start = std::chrono::steady_clock::now();
  if (!run_checks(delta)) return 1;
  std::printf("all diff/apply checks match the CPU reference (%.0f s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!run_fp8_checks()) return 1;
  std::printf("all block-FP8 checks match the CPU reference\n");
  std::vector<Timing> fp8;
  if (!benchmark_fp8(&fp8) || !benchmark(delta, json_path, fp8)) return 1;
  std::printf("dcr_cuda_selfcheck: all checks passed\n");
  return 0;
}
