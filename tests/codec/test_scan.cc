// The vectorised scan finds exactly the elements that differ, for every width, any sub-range and
// any alignment; gather and scatter are exact inverses.
#include <gtest/gtest.h>

#include <cstring>

#include "dcr/codec/frame.h"
#include "dcr/codec/scan.h"
#include "dcr/codec/simd.h"
#include "support/random_data.h"

namespace dcr {
namespace {

std::vector<uint32_t> naive(const uint8_t* a, const uint8_t* b, uint64_t begin, uint64_t end, unsigned w) {
  std::vector<uint32_t> out;
  for (uint64_t i = begin; i < end; ++i) {
    if (std::memcmp(a + i * w, b + i * w, w) != 0) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

TEST(Scan, MatchesANaiveScanForEveryWidthRangeAndAlignment) {
  for (unsigned w : {1u, 2u, 4u, 8u}) {
    for (double fraction : {0.0, 0.02, 0.5, 1.0}) {
      const uint64_t count = 3001;
      std::vector<uint8_t> base = test::random_bytes(count * w + 8, w);
      std::vector<uint8_t> target = base;
      std::vector<uint8_t> noise = test::random_bytes(count, w + 100);
      for (uint64_t i = 0; i < count; ++i) {
        if (noise[i] < fraction * 256) target[i * w + noise[i] % w] ^= uint8_t(1u << (noise[i] % 8));
      }
      for (uint64_t shift : {0ull, 1ull, 3ull}) {  // unaligned element arrays
        const uint8_t* a = base.data() + shift;
        std::vector<uint8_t> moved(target.size());
        std::memcpy(moved.data() + shift, target.data(), target.size() - shift);
        const uint8_t* b = moved.data() + shift;
        for (auto [begin, end] : {std::pair<uint64_t, uint64_t>{0, count}, {5, 2999}, {64, 65}, {7, 7}, {33, 200}}) {
          std::vector<uint32_t> got(count + kScanSlack);
          const uint64_t n = scan_changes_in(a, b, begin, end, w, got.data());
          got.resize(n);
          EXPECT_EQ(got, naive(a, b, begin, end, w)) << "width " << w << " range " << begin << ".." << end;
        }
      }
    }
  }
}

// Every width, mode and SIMD level; dense changes put neighbours in one vector of the AVX-512
// scatter, and the last element changes too (the vector loops leave it to the scalar code).
TEST(Scan, GatherThenScatterReproducesTheTargetAndSwapsBackTheBase) {
  for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx512_vbmi}) {
    limit_simd(level);
    for (unsigned w : {1u, 2u, 4u, 8u}) {
      for (double fraction : {0.2, 0.9, 1.0}) {
        const uint64_t count = 999;
        const std::vector<uint8_t> base = test::random_bytes(count * w, 40 + w);
        std::vector<uint8_t> target = test::perturb(base, w, fraction, 41);
        target[(count - 1) * w] ^= 1;
        std::vector<uint32_t> positions(count + kScanSlack);
        const uint64_t n = scan_changes(base.data(), target.data(), count, w, positions.data());
        for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
          std::vector<uint64_t> words(n);
          gather_words(base.data(), target.data(), w, mode, positions.data(), n, words.data());
          std::vector<uint8_t> dst = base;
          scatter_swap(dst.data(), count, w, mode, positions.data(), n, words.data());
          EXPECT_EQ(dst, target) << "width " << w << ", " << value_mode_name(mode) << ", level " << int(level);
          scatter_swap(dst.data(), count, w, ValueMode::overwrite, positions.data(), n, words.data());
          EXPECT_EQ(dst, base);
        }
      }
    }
  }
  limit_simd(SimdLevel::avx512_vbmi);
}

}  // namespace
}  // namespace dcr
