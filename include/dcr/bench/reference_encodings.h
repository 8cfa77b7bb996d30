// Sizes of the same deltas in the encodings of two published systems, for comparison:
//  - NeMo RL PR #2444 style: raw gaps as u16 (u32 when a gap needs it) + XOR values, zstd level 1.
//  - PULSE style: sorted indices delta-encoded in the narrowest integer width (u8/u16/u32) + new
//    values, zstd at its default level 3.
// Both are computed per frame range, like dcr's own frames.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace dcr {

class ReferenceEncodings {
 public:
  ReferenceEncodings();
  ~ReferenceEncodings();
  uint64_t nemo_style_bytes(const void* base, const void* target, unsigned width,
                            const uint32_t* positions, uint64_t changed);
  uint64_t pulse_style_bytes(const void* target, unsigned width, const uint32_t* positions,
                             uint64_t changed);

 private:
  uint64_t compressed_size(int level);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The entropy bound of a set of deltas: positions at H(p) bits per element for the measured
// change probability p, values at the empirical entropy of their words (XOR masks, and ordered
// deltas for comparison), both over the whole model; and the ordered deltas' entropy given the
// exponent of the base value (which a receiver holds before it decodes the change).
class EntropyBound {
 public:
  void add(const void* base, const void* target, unsigned width, uint64_t count,
           const uint32_t* positions, uint64_t changed, bool sign_magnitude, int exponent_shift);
  double xor_bound_bytes() const;
  double delta_bound_bytes() const;
  double exponent_bound_bytes() const;
  uint64_t elements() const { return elements_; }
  uint64_t changed() const { return changed_; }

 private:
  double position_bits() const;
  uint64_t elements_ = 0;
  uint64_t changed_ = 0;
  // Word counts per element width: dense tables for 1- and 2-byte words, maps for wider ones.
  struct WordCounts {
    std::vector<uint64_t> narrow[3];  // indexed by width (1, 2)
    std::unordered_map<uint64_t, uint64_t> wide[9];
    void add(unsigned width, uint64_t word);
    double entropy_bits() const;
  };
  WordCounts xor_words_;
  WordCounts delta_words_;
  std::unordered_map<uint32_t, WordCounts> by_exponent_;  // ordered deltas by (width, exponent)
};

}  // namespace dcr
