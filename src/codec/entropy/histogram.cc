// Byte histograms of symbol streams: exact, strided, or sampled for rANS tables.
#include "dcr/codec/rans.h"

#include <algorithm>

namespace dcr {

namespace {

// The counts of symbols 0, stride, 2 stride, ... below count, in four sub-histograms: they break
// the store-to-load dependency on runs of one symbol.
inline void count_every(const uint8_t* symbols, size_t count, size_t stride, Histogram* hist) {
  uint32_t part[4][256] = {};
  const size_t step = 4 * stride;
  size_t i = 0;
  for (; i + step <= count; i += step) {
    ++part[0][symbols[i]];
    ++part[1][symbols[i + stride]];
    ++part[2][symbols[i + 2 * stride]];
    ++part[3][symbols[i + 3 * stride]];
  }
  for (; i < count; i += stride) ++part[0][symbols[i]];
  for (int s = 0; s < 256; ++s) {
    (*hist)[s] = static_cast<uint64_t>(part[0][s]) + part[1][s] + part[2][s] + part[3][s];
  }
}

}  // namespace

void histogram_of(const uint8_t* symbols, size_t count, Histogram* hist) { count_every(symbols, count, 1, hist); }

void strided_histogram_of(const uint8_t* symbols, size_t count, size_t stride, Histogram* hist) {
  count_every(symbols, count, stride, hist);
}

void sampled_histogram_of(const uint8_t* symbols, size_t count, uint8_t max_symbol, Histogram* hist) {
  if (count <= kExactHistogram) return histogram_of(symbols, count, hist);
  count_every(symbols, count, kHistogramStride, hist);
  for (int s = 0; s < 256; ++s) {
    (*hist)[s] = s <= max_symbol ? std::max<uint64_t>(1, (*hist)[s] * kHistogramStride) : 0;
  }
}

}  // namespace dcr
