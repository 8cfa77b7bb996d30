// How one changed element travels, and the element-level arithmetic of every mode. This header is
// shared verbatim by the CPU codec and the CUDA kernels (host and device), so both compute the
// same word for the same pair of bit patterns.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DCR_HD __host__ __device__ __forceinline__
#else
#define DCR_HD inline
#endif

namespace dcr {

enum class ValueMode : uint8_t {
  xor_mask = 0,   // word = old ^ new; apply: old ^ word
  overwrite = 1,  // word = new; apply: word
  delta_sm = 2,   // word = key(new) - key(old) in sign-magnitude order (floats), zigzagged
  delta_tc = 3,   // word = new - old in two's complement order (integers), zigzagged
};
constexpr int kValueModeCount = 4;

DCR_HD uint64_t width_mask(unsigned width) {
  return width >= 8 ? ~0ull : ((1ull << (8 * width)) - 1);
}

DCR_HD uint64_t sign_bit(unsigned width) { return 1ull << (8 * width - 1); }

// All-ones when the top bit of a `width`-byte word is set, else zero. The helpers below are
// branch-free: signs of trained weights are random, so a branch on them would mispredict half the time.
DCR_HD uint64_t top_bit_mask(uint64_t bits, unsigned width) { return 0 - ((bits >> (8 * width - 1)) & 1); }

// Monotonic key of a sign-magnitude pattern: -max < ... < -0 < +0 < ... < +max map to increasing keys
// (a negative pattern is inverted, a positive one gets its sign bit set).
DCR_HD uint64_t sm_key(uint64_t bits, unsigned width) {
  return (bits ^ (top_bit_mask(bits, width) | sign_bit(width))) & width_mask(width);
}

DCR_HD uint64_t sm_unkey(uint64_t key, unsigned width) {
  return (key ^ (~top_bit_mask(key, width) | sign_bit(width))) & width_mask(width);
}

// Zigzag over a W-byte ring: small positive and negative differences become small words.
DCR_HD uint64_t zigzag(uint64_t diff, unsigned width) {
  const uint64_t mask = width_mask(width);
  diff &= mask;
  return ((diff << 1) ^ top_bit_mask(diff, width)) & mask;
}

DCR_HD uint64_t unzigzag(uint64_t word, unsigned width) {
  return ((word >> 1) ^ (0 - (word & 1))) & width_mask(width);
}

DCR_HD uint64_t encode_word(ValueMode mode, uint64_t old_bits, uint64_t new_bits, unsigned width) {
  const uint64_t mask = width_mask(width);
  switch (mode) {
    case ValueMode::xor_mask: return (old_bits ^ new_bits) & mask;
    case ValueMode::overwrite: return new_bits & mask;
    case ValueMode::delta_sm:
      return zigzag(sm_key(new_bits, width) - sm_key(old_bits, width), width);
    case ValueMode::delta_tc: return zigzag(new_bits - old_bits, width);
  }
  return 0;
}

DCR_HD uint64_t apply_word(ValueMode mode, uint64_t old_bits, uint64_t word, unsigned width) {
  const uint64_t mask = width_mask(width);
  switch (mode) {
    case ValueMode::xor_mask: return (old_bits ^ word) & mask;
    case ValueMode::overwrite: return word & mask;
    case ValueMode::delta_sm:
      return sm_unkey((sm_key(old_bits, width) + unzigzag(word, width)) & mask, width);
    case ValueMode::delta_tc: return (old_bits + unzigzag(word, width)) & mask;
  }
  return old_bits;
}

}  // namespace dcr
