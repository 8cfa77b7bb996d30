#include "src/codec/encode/change_collector.h"

#include <algorithm>

#include "dcr/codec/scan.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"
#include "src/codec/tokens/tokenize.h"

namespace dcr {

void ChangeCollector::start(unsigned width, ValueMode delta_mode, uint64_t elements, uint64_t capacity) {
  width_ = width;
  delta_mode_ = delta_mode;
  elements_ = elements;
  changed_ = 0;
  next_position_ = 0;
  tokenised_ = 0;
  gap_writer_.start(&gaps_, capacity, 30);  // gaps are below 2^32
  delta_writer_.start(&deltas_, capacity, 8 * width);
  sampled_ = 0;
  xor_hist_.fill(0);
  xor_extra_bits_ = 0;
  for (unsigned p = 0; p < width; ++p) {  // the planes past the width stay unused
    new_planes_[p].fill(0);
    xor_planes_[p].fill(0);
  }
}

template <unsigned W, ValueMode Delta>
void ChangeCollector::tokenize(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                               ChangedWords words) {
  TokenWriter::Cursor gaps = gap_writer_.cursor(), deltas = delta_writer_.cursor();
  const uint64_t first = std::min(tokenised_, n);  // the scan tokenised those
  tokenised_ = 0;
  tokenize_changes<W, Delta>(base, target, positions, first, n, words, elements_, &next_position_, &gaps, &deltas);
  gap_writer_.commit(gaps);
  delta_writer_.commit(deltas);
}

// The other value choices are only measured, on every kSampleStride-th change.
template <unsigned W>
void ChangeCollector::sample(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                             ChangedWords words) {
  const bool staged = W == 2 && words.base != nullptr;
  // Counts in locals: the histograms' stores could alias the members, which would chain each
  // sample on the one before through memory.
  uint64_t sampled = sampled_, extra_bits = xor_extra_bits_;
  for (uint64_t j = (kSampleStride - changed_ % kSampleStride) % kSampleStride; j < n; j += kSampleStride) {
    const uint64_t p = positions[j];
    const uint64_t a = staged ? words.base[j] : load_word(base, p, W);
    const uint64_t b = staged ? words.target[j] : load_word(target, p, W);
    const uint64_t x = a ^ b;
    const Token tx = make_token(x);
    ++xor_hist_[tx.symbol];
    extra_bits += tx.extra_bits;
    for (unsigned plane = 0; plane < W; ++plane) {
      ++new_planes_[plane][(b >> (8 * plane)) & 0xff];
      ++xor_planes_[plane][(x >> (8 * plane)) & 0xff];
    }
    ++sampled;
  }
  sampled_ = sampled;
  xor_extra_bits_ = extra_bits;
  changed_ += n;
}

template <unsigned W>
void ChangeCollector::add_fixed(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                                ChangedWords words) {
  if (delta_mode_ == ValueMode::delta_sm) {
    tokenize<W, ValueMode::delta_sm>(base, target, positions, n, words);
  } else {
    tokenize<W, ValueMode::delta_tc>(base, target, positions, n, words);
  }
  sample<W>(base, target, positions, n, words);
}

void ChangeCollector::add(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t n,
                          ChangedWords words) {
  switch (width_) {
    case 1: return add_fixed<1>(base, target, positions, n, words);
    case 2: return add_fixed<2>(base, target, positions, n, words);
    case 4: return add_fixed<4>(base, target, positions, n, words);
    default: return add_fixed<8>(base, target, positions, n, words);
  }
}

ScanTokens ChangeCollector::lend_tokens() const {
  return ScanTokens{gap_writer_.cursor(), delta_writer_.cursor(), next_position_, 0, delta_mode_};
}

void ChangeCollector::take_back(const ScanTokens& tokens) {
  gap_writer_.commit(tokens.gaps);
  delta_writer_.commit(tokens.deltas);
  next_position_ = tokens.next;
  tokenised_ = tokens.done;
}

void ChangeCollector::finish() {
  gap_writer_.finish();
  delta_writer_.finish();
}

ValueCosts ChangeCollector::costs() const {
  const double factor = sampled_ == 0 ? 0.0 : static_cast<double>(changed_) / sampled_;
  auto planes_cost = [&](const Histogram* planes) {
    double total = 0;
    for (unsigned b = 0; b < width_; ++b) total += StreamCodec::estimate(planes[b], changed_);
    return total;
  };
  ValueCosts c;
  c.delta_tokens = delta_writer_.cost();
  c.xor_tokens = token_pair_cost(xor_hist_, changed_, static_cast<uint64_t>(xor_extra_bits_ * factor));
  c.overwrite_planes = planes_cost(new_planes_);
  c.xor_planes = planes_cost(xor_planes_);
  return c;
}

}  // namespace dcr
