// The element arithmetic of the value modes (dcr/codec/value_mode.h): ordered keys, zigzag, and
// apply undoing encode.
#include <vector>
#include <gtest/gtest.h>

#include "dcr/codec/value_mode.h"

namespace dcr {
namespace {

TEST(ValueMode, OrderedKeysAreMonotonicAndInvertible) {
  for (unsigned width : {1u, 2u, 4u, 8u}) {
    const uint64_t mask = width_mask(width);
    const uint64_t samples[] = {0, 1, sign_bit(width), sign_bit(width) | 1, mask, mask >> 1, 0x5a & mask};
    for (uint64_t bits : samples) {
      EXPECT_EQ(sm_unkey(sm_key(bits, width), width), bits);
      for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
        const uint64_t other = (bits * 0x9e3779b97f4a7c15ull + 3) & mask;
        EXPECT_EQ(apply_word(mode, bits, encode_word(mode, bits, other, width), width), other);
      }
    }
    // -0 and +0 are neighbours; so are the largest negative and -0's far side.
    EXPECT_EQ(sm_key(0, width), sm_key(sign_bit(width), width) + 1);
  }
}

// Every 16-bit sign-magnitude pattern, in increasing order of the number it stands for (-0 just
// below +0): the keys must count up by one, and zigzag must map +d and -d to 2d and 2d - 1.
TEST(ValueMode, KeysOfEverySixteenBitPatternFollowNumericOrder) {
  std::vector<uint64_t> ascending;
  for (uint64_t m = 0x7fff;; --m) {  // negatives, largest magnitude first, down to -0
    ascending.push_back(0x8000 | m);
    if (m == 0) break;
  }
  for (uint64_t m = 0; m <= 0x7fff; ++m) ascending.push_back(m);
  for (size_t i = 0; i < ascending.size(); ++i) {
    ASSERT_EQ(sm_key(ascending[i], 2), i) << "pattern " << ascending[i];
    ASSERT_EQ(sm_unkey(i, 2), ascending[i]);
  }
  for (uint64_t d = 1; d < 0x8000; ++d) {
    ASSERT_EQ(zigzag(d, 2), 2 * d);
    ASSERT_EQ(zigzag(0x10000 - d, 2), 2 * d - 1);
    ASSERT_EQ(unzigzag(2 * d - 1, 2), 0x10000 - d);
  }
}

}  // namespace
}  // namespace dcr
