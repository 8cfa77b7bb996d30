// Internal to the codec: gathers everything the encoder needs from the changed elements in one
// pass per cache-sized block, while the block is hot — the gap-token and ordered-delta token streams
// ready to entropy-code (the usual choice), and histograms estimating the coded size of the other
// value choices from every kSampleStride-th change (enough to choose; the choice never affects
// correctness, only size).
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/bit_io.h"
#include "dcr/codec/rans.h"
#include "dcr/codec/value_mode.h"
#include "src/codec/sections.h"

namespace dcr {

struct ValueCosts {
  double delta_tokens = 0;
  double xor_tokens = 0;
  double overwrite_planes = 0;
  double xor_planes = 0;
};

// Appends tokens of successive values to a token-pair section, counting the token histogram.
// Hot loops take a Cursor (plain locals the compiler keeps in registers) and hand it back.
class TokenWriter {
 public:
  struct Cursor {
    uint8_t* symbols;
    uint32_t* hist;  // two interleaved halves (even, odd counts): runs of one symbol do not
                     // serialise on one counter
    uint64_t count;
    uint64_t extra_bits;
    BitWriter bits;
    void add(uint64_t value) {
      const Token t = make_token(value);
      ++hist[((count & 1) << 8) | t.symbol];
      symbols[count++] = t.symbol;
      if (t.extra_bits != 0) {
        extra_bits += t.extra_bits;
        bits.put(t.extra, t.extra_bits);
      }
    }
  };

  void start(Section* section, uint64_t capacity);
  Cursor cursor() { return Cursor{symbols_.data(), halves_, count_, extra_bits_, bits_}; }
  void commit(const Cursor& c) {
    count_ = c.count;
    extra_bits_ = c.extra_bits;
    bits_ = c.bits;
  }
  void finish();  // trims the symbols, flushes the bits, records the histogram in the section
  double cost() const;

 private:
  Section* section_ = nullptr;
  std::vector<uint8_t> symbols_;  // grows, never shrinks: no clearing per frame
  uint64_t count_ = 0;
  uint64_t extra_bits_ = 0;
  uint32_t halves_[512] = {};
  BitWriter bits_{nullptr};
};

class ChangeCollector {
 public:
  // `capacity`: the most changes the frame can hold (its element count).
  void start(unsigned width, ValueMode delta_mode, uint64_t capacity);
  // Adds the changed elements at positions[0..n) (ascending, after any added before).
  void add(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n);
  void finish();

  ValueCosts costs() const;
  const Section& gap_tokens() const { return gaps_; }
  const Section& delta_tokens() const { return deltas_; }

 private:
  template <unsigned W, ValueMode Delta>
  void add_fixed(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n);

  unsigned width_ = 2;
  ValueMode delta_mode_ = ValueMode::delta_sm;
  uint64_t changed_ = 0;
  uint64_t next_position_ = 0;
  Section gaps_, deltas_;
  TokenWriter gap_writer_, delta_writer_;
  static constexpr uint64_t kSampleStride = 4;
  uint64_t sampled_ = 0;
  Histogram xor_hist_{};
  uint64_t xor_extra_bits_ = 0;
  Histogram new_planes_[8] = {};
  Histogram xor_planes_[8] = {};
};

}  // namespace dcr
