#include "src/codec/contexts/context_coder.h"

#include <algorithm>

#include "dcr/codec/simd.h"
#include "dcr/codec/stream.h"
#include "src/codec/encode/section.h"
#include "src/codec/common/simd_x86.h"

namespace dcr {

ContextCoder::ContextCoder() : rows_(256) {}

// The estimated rule and token streams for contexts [first, first + buckets) (the tails joining the
// edge buckets), each bucket's tokens coded with a table of its own. Buckets between the edges hold
// one context each, whose estimate choose() took once.
double ContextCoder::estimate(unsigned first, unsigned buckets) const {
  const double rule = 6;  // the rule's raw stream: coder, two varints, three bytes
  const double fixed = rule + StreamCodec::bucket_stream_overhead(n_);
  if (buckets == 1) return fixed + merged_estimate(0, 256);
  double total = fixed + merged_estimate(0, first + 1);
  for (unsigned c = first + 1; c + 1 < first + buckets; ++c) total += single_[c];
  return total + merged_estimate(first + buckets - 1, 256);
}

// The estimated table and code of contexts [begin, end) as one bucket.
double ContextCoder::merged_estimate(unsigned begin, unsigned end) const {
  Histogram bucket{};
  uint64_t size = 0;
  for (unsigned c = begin; c < end; ++c) {
    if (per_context_[c] == 0) continue;
    for (unsigned s = 0; s < symbols_; ++s) bucket[s] += rows_[c][s];
    size += per_context_[c] * stride_;
  }
  return StreamCodec::estimate_table_and_code(bucket, size);
}

double ContextCoder::choose(const uint8_t* contexts, const uint8_t* tokens, uint64_t n, uint8_t shift) {
  constexpr uint64_t kExactBelow = 1 << 16;  // longer frames are sampled: the rule never affects correctness
  n_ = n;
  stride_ = n < kExactBelow ? 1 : 4;
  strided_histogram_of(contexts, n, stride_, &per_context_);
  for (unsigned c = 0; c < 256; ++c) {
    if (per_context_[c] != 0) rows_[c].fill(0);
  }
  uint8_t largest = 0;
  for (uint64_t j = 0; j < n; j += stride_) {
    ++rows_[contexts[j]][tokens[j]];
    largest = std::max(largest, tokens[j]);
  }
  symbols_ = largest + 1u;
  const double empty = StreamCodec::estimate_table_and_code(Histogram{}, 0);
  for (unsigned c = 0; c < 256; ++c) single_[c] = per_context_[c] == 0 ? empty : merged_estimate(c, c + 1);
  rule_ = ContextBuckets{shift, 0, 1};
  double best = estimate(0, 1);
  // Candidates: the contexts holding at least `least` changes each get a bucket of their own.
  for (uint64_t least = 16; least <= n; least *= 4) {
    const uint64_t sampled = least / stride_;
    unsigned first = 256, last = 0;
    for (unsigned c = 0; c < 256; ++c) {
      if (per_context_[c] < sampled) continue;
      first = std::min(first, c);
      last = c;
    }
    if (first > last) break;
    const unsigned buckets = std::min(last - first + 1, kMaxContextBuckets);
    const double size = estimate(first, buckets);
    if (size < best) {
      best = size;
      rule_ = ContextBuckets{shift, static_cast<uint8_t>(first), static_cast<uint8_t>(buckets)};
    }
  }
  return best;
}

namespace {

#if defined(__x86_64__)
// ContextBuckets::bucket of the 64 contexts at `contexts`.
DCR_AVX512_VBMI inline __m512i bucket_ids64(const uint8_t* contexts, const ContextBuckets& rule) {
  const __m512i above_first =
      _mm512_subs_epu8(_mm512_loadu_si512(contexts), _mm512_set1_epi8(static_cast<char>(rule.first)));
  return _mm512_min_epu8(above_first, _mm512_set1_epi8(static_cast<char>(rule.buckets - 1)));
}

DCR_AVX512_VBMI uint64_t bucket_ids_avx512(const uint8_t* contexts, uint64_t n, const ContextBuckets& rule,
                                           uint8_t* buckets) {
  const uint64_t whole = n / 64 * 64;
  for (uint64_t j = 0; j < whole; j += 64) _mm512_storeu_si512(buckets + j, bucket_ids64(contexts + j, rule));
  return whole;
}

DCR_AVX512 uint64_t contexts_of_avx512(const uint16_t* words, uint64_t n, unsigned shift, uint8_t* contexts) {
  const uint64_t whole = n / 32 * 32;
  const __m128i count = _mm_cvtsi32_si128(static_cast<int>(shift));
  for (uint64_t j = 0; j < whole; j += 32) {
    const __m512i shifted = _mm512_srl_epi16(_mm512_loadu_si512(words + j), count);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(contexts + j), _mm512_cvtepi16_epi8(shifted));
  }
  return whole;
}
#endif

}  // namespace

void contexts_of(const uint16_t* words, uint64_t n, unsigned shift, uint8_t* contexts) {
  uint64_t j = 0;
#if defined(__x86_64__)
  if (simd_level() >= SimdLevel::avx512) j = contexts_of_avx512(words, n, shift, contexts);
#endif
  for (; j < n; ++j) contexts[j] = static_cast<uint8_t>(words[j] >> shift);
}

namespace {

// Each of n changes' bucket, from its context (bucket_of: ContextBuckets::fill_table).
void bucket_ids(const uint8_t* contexts, uint64_t n, const ContextBuckets& rule, const uint8_t* bucket_of,
                uint8_t* buckets) {
  uint64_t j = 0;
#if defined(__x86_64__)
  if (simd_level() >= SimdLevel::avx512_vbmi) j = bucket_ids_avx512(contexts, n, rule, buckets);
#endif
  for (; j < n; ++j) buckets[j] = bucket_of[contexts[j]];
}

}  // namespace

// Every bucket's exact token counts (the tables must give each token present a frequency), then
// the token stream, each token by its bucket's table.
void ContextCoder::build(const uint8_t* contexts, const Section& value_tokens, StreamCodec* codec, Section* out) {
  const unsigned buckets = rule_.buckets;
  uint8_t bucket_of[256];
  rule_.fill_table(bucket_of);
  uint8_t* ids = buckets_.reserve(n_);
  bucket_ids(contexts, n_, rule_, bucket_of, ids);
  const uint8_t* tokens = value_tokens.streams[0].data();
  // Two sets of counts, even and odd changes, so that runs of one token in one bucket make two
  // chains of increments, not one.
  const size_t cells = 256 * size_t{buckets};
  counts_.assign(2 * cells, 0);
  uint32_t* even = counts_.data();
  uint32_t* odd = even + cells;
  uint64_t j = 0;
  for (; j + 2 <= n_; j += 2) {
    ++even[256 * ids[j] + tokens[j]];
    ++odd[256 * ids[j + 1] + tokens[j + 1]];
  }
  if (j < n_) ++even[256 * ids[j] + tokens[j]];
  bucket_counts_.resize(buckets);
  for (unsigned b = 0; b < buckets; ++b) {
    for (unsigned t = 0; t < 256; ++t) bucket_counts_[b][t] = uint64_t{even[256 * b + t]} + odd[256 * b + t];
  }
  out->reset(3);
  out->streams[0].bytes = {rule_.shift, rule_.first, rule_.buckets};
  out->streams[0].raw_only = true;
  codec->write_buckets(tokens, ids, n_, bucket_counts_.data(), buckets, &out->streams[1].bytes);
  out->streams[1].coded = true;
  out->streams[2] = value_tokens.streams[1];
}

}  // namespace dcr
