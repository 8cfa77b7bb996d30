// The joint bytes of position coding gaps-joint: the split of gap and value tokens into joint bytes
// and escapes, and the merge back, at every SIMD level this CPU runs, against the scalar loops
// (every tail length, both gap bounds, all-escape and no-escape runs).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dcr/codec/simd.h"
#include "src/codec/tokens/joint.h"

namespace dcr {
namespace {

struct Tokens {
  std::vector<uint8_t> gaps, values;
};

// Gap tokens mostly short, value tokens mostly 1 or 2, as at a few % changed; `escape` sets how
// often a value token is something else.
Tokens random_tokens(uint64_t n, double escape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  Tokens t{std::vector<uint8_t>(n), std::vector<uint8_t>(n)};
  for (uint64_t j = 0; j < n; ++j) {
    t.gaps[j] = static_cast<uint8_t>(coin(rng) < 0.9 ? rng() % 40 : rng() % 256);
    t.values[j] = static_cast<uint8_t>(coin(rng) < escape ? rng() % 256 : 1 + rng() % 2);
  }
  return t;
}

struct Split {
  std::vector<uint8_t> joint, escape_gaps, escape_values;
  JointMax max;
  bool operator==(const Split& o) const {
    return joint == o.joint && escape_gaps == o.escape_gaps && escape_values == o.escape_values &&
           max.joint == o.max.joint && max.escape_gap == o.max.escape_gap && max.escape_value == o.max.escape_value;
  }
};

Split split_at(SimdLevel level, const Tokens& t, uint8_t bound) {
  limit_simd(level);
  const uint64_t n = t.gaps.size();
  Split s{std::vector<uint8_t>(n), std::vector<uint8_t>(n + 64), std::vector<uint8_t>(n + 64), {}};
  const uint64_t escapes = split_joint(t.gaps.data(), t.values.data(), n, bound, s.joint.data(), s.escape_gaps.data(),
                                       s.escape_values.data(), &s.max);
  limit_simd(SimdLevel::avx512_vbmi);
  s.escape_gaps.resize(escapes);
  s.escape_values.resize(escapes);
  return s;
}

TEST(Joint, SplitAndMergeMatchTheScalarLoopsAndGiveTheTokensBack) {
  for (uint64_t n : {0ull, 1ull, 15ull, 16ull, 17ull, 63ull, 64ull, 65ull, 200ull, 4099ull}) {
    for (double escape : {0.0, 0.15, 1.0}) {
      for (uint8_t bound : {uint8_t{30}, uint8_t{62}}) {
        const Tokens t = random_tokens(n, escape, n * 7 + bound);
        const Split reference = split_at(SimdLevel::scalar, t, bound);
        for (SimdLevel level : {SimdLevel::avx512, SimdLevel::avx512_vbmi}) {
          if (level > simd_level()) continue;
          EXPECT_EQ(split_at(level, t, bound), reference) << n << " tokens, level " << int(level);
        }
        // Every joint byte is 2 * gap token + value token, or 0 where the change escapes.
        for (uint64_t j = 0; j < n; ++j) EXPECT_EQ(reference.joint[j], joint_byte(t.gaps[j], t.values[j], bound));
        EXPECT_EQ(count_escapes(reference.joint.data(), n), reference.escape_gaps.size());

        std::vector<uint64_t> escape_words(reference.escape_values.begin(), reference.escape_values.end());
        for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx512, SimdLevel::avx512_vbmi}) {
          if (level > simd_level()) continue;
          limit_simd(level);
          std::vector<uint8_t> gaps(n);
          std::vector<uint64_t> words(n);
          const uint64_t used = merge_joint(reference.joint.data(), n, reference.escape_gaps.data(), escape_words.data(),
                                            gaps.data(), words.data());
          limit_simd(SimdLevel::avx512_vbmi);
          EXPECT_EQ(used, escape_words.size());
          EXPECT_EQ(gaps, t.gaps) << n << " tokens, level " << int(level);
          EXPECT_EQ(words, std::vector<uint64_t>(t.values.begin(), t.values.end())) << n << " tokens, level " << int(level);
        }
      }
    }
  }
}

TEST(Joint, TheGapBoundFollowsHowManyGapsAreLong) {
  uint64_t histogram[256] = {};
  histogram[3] = 1000;
  histogram[31] = 5;  // 0.5% of the gaps longer than the short bound
  EXPECT_EQ(joint_gap_bound(histogram), 30);
  histogram[40] = 1;
  EXPECT_EQ(joint_gap_bound(histogram), 62);
}

}  // namespace
}  // namespace dcr
