#include "src/codec/value_costs.h"

#include "dcr/codec/scan.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"

namespace dcr {

ValueCostCounter::ValueCostCounter(unsigned width, ValueMode delta_mode) : width_(width), delta_mode_(delta_mode) {}

namespace {

template <unsigned W, ValueMode Delta>
void count_fixed(const void* base, const void* target, const uint32_t* positions, uint64_t n,
                 uint64_t* delta_words, uint64_t* xor_words, Histogram* delta_hist, uint64_t* delta_extra,
                 Histogram* xor_hist, uint64_t* xor_extra, Histogram* new_planes, Histogram* xor_planes) {
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t a = load_word(base, positions[j], W), b = load_word(target, positions[j], W);
    const uint64_t d = encode_word(Delta, a, b, W), x = a ^ b;
    delta_words[j] = d;
    xor_words[j] = x;
    const Token td = make_token(d), tx = make_token(x);
    ++(*delta_hist)[td.symbol];
    *delta_extra += td.extra_bits;
    ++(*xor_hist)[tx.symbol];
    *xor_extra += tx.extra_bits;
    for (unsigned p = 0; p < W; ++p) {
      ++new_planes[p][(b >> (8 * p)) & 0xff];
      ++xor_planes[p][(x >> (8 * p)) & 0xff];
    }
  }
}

template <unsigned W>
void count_width(ValueMode delta_mode, const void* base, const void* target, const uint32_t* positions, uint64_t n,
                 uint64_t* dw, uint64_t* xw, Histogram* dh, uint64_t* de, Histogram* xh, uint64_t* xe,
                 Histogram* np, Histogram* xp) {
  if (delta_mode == ValueMode::delta_sm) {
    count_fixed<W, ValueMode::delta_sm>(base, target, positions, n, dw, xw, dh, de, xh, xe, np, xp);
  } else {
    count_fixed<W, ValueMode::delta_tc>(base, target, positions, n, dw, xw, dh, de, xh, xe, np, xp);
  }
}

double planes_cost(const Histogram* planes, unsigned width, uint64_t changed) {
  double total = 0;
  for (unsigned b = 0; b < width; ++b) total += StreamCodec::estimate(planes[b], changed);
  return total;
}

}  // namespace

void ValueCostCounter::add(const void* base, const void* target, const uint32_t* positions, uint64_t n,
                           uint64_t* delta_words, uint64_t* xor_words) {
  changed_ += n;
  auto* count = width_ == 1 ? count_width<1> : width_ == 2 ? count_width<2> : width_ == 4 ? count_width<4> : count_width<8>;
  count(delta_mode_, base, target, positions, n, delta_words, xor_words, &delta_.hist, &delta_.extra_bits,
        &xor_.hist, &xor_.extra_bits, new_planes_, xor_planes_);
}

ValueCosts ValueCostCounter::costs() const {
  auto tokens_cost = [&](const TokenCount& t) {
    return StreamCodec::estimate(t.hist, changed_) + (t.extra_bits + 7) / 8 + 3;
  };
  ValueCosts c;
  c.delta_tokens = tokens_cost(delta_);
  c.xor_tokens = tokens_cost(xor_);
  c.overwrite_planes = planes_cost(new_planes_, width_, changed_);
  c.xor_planes = planes_cost(xor_planes_, width_, changed_);
  return c;
}

}  // namespace dcr
