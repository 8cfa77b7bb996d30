// Internal to the codec: gathers everything the encoder needs from the changed elements — the
// gap-token and ordered-delta token streams ready to entropy-code (the usual choice), and
// histograms estimating the coded size of the other value choices from every kSampleStride-th
// change (enough to choose; the choice never affects correctness, only size). Changes come per
// cache-sized block while the block is hot, or all at once with their words copied out by the
// fused scan (scan_hash.h).
#pragma once

#include <cstdint>

#include "dcr/codec/rans.h"
#include "dcr/codec/value_mode.h"
#include "src/codec/encode/section.h"
#include "src/codec/scan/scan_hash.h"
#include "src/codec/tokens/token_writer.h"

namespace dcr {

struct ValueCosts {
  double delta_tokens = 0;
  double xor_tokens = 0;
  double overwrite_planes = 0;
  double xor_planes = 0;
};

class ChangeCollector {
 public:
  // `elements`: the box's element count; `capacity`: the most changes that will be added.
  void start(unsigned width, ValueMode delta_mode, uint64_t elements, uint64_t capacity);
  // Adds the changed elements at positions[0..n) (ascending, after any added before). `words`,
  // where not null, holds their 2-byte words as scan_and_hash copied them out; the buffers are then
  // not read (they may be null).
  void add(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
           ChangedWords words = {nullptr, nullptr});
  void finish();

  // For scan_and_hash: the token streams, to tokenise the next add()'s changes (the box's, from
  // its first) while they are found; take_back() returns them.
  ScanTokens lend_tokens() const;
  void take_back(const ScanTokens& tokens);

  ValueCosts costs() const;
  const Section& gap_tokens() const { return gaps_; }
  const Section& delta_tokens() const { return deltas_; }

 private:
  template <unsigned W>
  void add_fixed(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                 ChangedWords words);
  template <unsigned W, ValueMode Delta>
  void tokenize(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                ChangedWords words);
  template <unsigned W>
  void sample(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
              ChangedWords words);

  unsigned width_ = 2;
  ValueMode delta_mode_ = ValueMode::delta_sm;
  uint64_t elements_ = 0;
  uint64_t changed_ = 0;
  uint64_t next_position_ = 0;
  uint64_t tokenised_ = 0;  // changes of the next add() tokenised during the scan
  Section gaps_, deltas_;
  TokenWriter gap_writer_, delta_writer_;
  static constexpr uint64_t kSampleStride = 16;
  uint64_t sampled_ = 0;
  Histogram xor_hist_{};
  uint64_t xor_extra_bits_ = 0;
  Histogram new_planes_[8] = {};
  Histogram xor_planes_[8] = {};
};

}  // namespace dcr
