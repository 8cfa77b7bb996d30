// Internal to the codec: the coded size of every value choice for one frame, accumulated block by
// block while the encoder scans (token and byte-plane histograms), so the words of the two token
// choices are computed while their elements are still in cache and only the kept choice is
// entropy-coded.
#pragma once

#include <cstdint>

#include "dcr/codec/rans.h"
#include "dcr/codec/value_mode.h"

namespace dcr {

struct ValueCosts {
  double delta_tokens = 0;
  double xor_tokens = 0;
  double overwrite_planes = 0;
  double xor_planes = 0;
};

class ValueCostCounter {
 public:
  ValueCostCounter(unsigned width, ValueMode delta_mode);
  // Adds the changed elements at positions[0..n): writes their ordered-delta and XOR words.
  void add(const void* base, const void* target, const uint32_t* positions, uint64_t n,
           uint64_t* delta_words, uint64_t* xor_words);
  ValueCosts costs() const;

 private:
  struct TokenCount {
    Histogram hist{};
    uint64_t extra_bits = 0;
  };
  unsigned width_;
  ValueMode delta_mode_;
  uint64_t changed_ = 0;
  TokenCount delta_, xor_;
  Histogram new_planes_[8] = {};
  Histogram xor_planes_[8] = {};
};

}  // namespace dcr
