#include "src/codec/contexts.h"

#include <algorithm>
#include <cstring>

#include "dcr/codec/simd.h"
#include "dcr/codec/stream.h"
#include "src/codec/sections.h"
#include "src/codec/simd_x86.h"

namespace dcr {

ContextCoder::ContextCoder() : rows_(256) {}

// The estimated rule and token streams for contexts [first, first + buckets) (the tails joining the
// edge buckets), each bucket's tokens coded with a table of its own. Buckets between the edges hold
// one context each, whose estimate choose() took once.
double ContextCoder::estimate(unsigned first, unsigned buckets) const {
  const double rule = 6;  // the rule's raw stream: coder, two varints, three bytes
  if (buckets == 1) return rule + merged_estimate(0, 256);
  double total = rule + merged_estimate(0, first + 1);
  for (unsigned c = first + 1; c + 1 < first + buckets; ++c) total += single_[c];
  return total + merged_estimate(first + buckets - 1, 256);
}

// The estimated token stream of contexts [begin, end) as one bucket.
double ContextCoder::merged_estimate(unsigned begin, unsigned end) const {
  Histogram bucket{};
  uint64_t size = 0;
  for (unsigned c = begin; c < end; ++c) {
    if (per_context_[c] == 0) continue;
    for (unsigned s = 0; s < symbols_; ++s) bucket[s] += rows_[c][s];
    size += per_context_[c] * stride_;
  }
  return StreamCodec::estimate(bucket, size);
}

double ContextCoder::choose(const uint8_t* contexts, const uint8_t* tokens, uint64_t n, uint8_t shift) {
  constexpr uint64_t kExactBelow = 1 << 16;  // longer frames are sampled: the rule never affects correctness
  n_ = n;
  stride_ = n < kExactBelow ? 1 : 4;
  std::memset(per_context_, 0, sizeof per_context_);
  for (uint64_t j = 0; j < n; j += stride_) ++per_context_[contexts[j]];
  for (unsigned c = 0; c < 256; ++c) {
    if (per_context_[c] != 0) rows_[c].fill(0);
  }
  uint8_t largest = 0;
  for (uint64_t j = 0; j < n; j += stride_) {
    ++rows_[contexts[j]][tokens[j]];
    largest = std::max(largest, tokens[j]);
  }
  symbols_ = largest + 1u;
  const double empty = StreamCodec::estimate(Histogram{}, 0);
  for (unsigned c = 0; c < 256; ++c) single_[c] = per_context_[c] == 0 ? empty : merged_estimate(c, c + 1);
  rule_ = ContextRule{shift, 0, 1};
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
      rule_ = ContextRule{shift, static_cast<uint8_t>(first), static_cast<uint8_t>(buckets)};
    }
  }
  return best;
}

namespace {

// The scalar twin splits the changes into kLanes equal parts, side by side: each part has its own
// count and write pointer per bucket, so a run of changes in one bucket is kLanes chains through
// memory instead of one (a pointer's increment must land before its next use). The vector build
// puts every change in part 0.
constexpr unsigned kLanes = 4;
using LaneSizes = uint64_t[kLanes][kMaxContextBuckets];
using LanePointers = uint8_t* [kLanes][kMaxContextBuckets];
// Spare bytes after each bucket's region: the vector scatter stores whole registers.
constexpr uint64_t kRegionSlack = 64;

void count_lanes(const uint8_t* contexts, uint64_t n, const uint8_t* bucket_of, LaneSizes& sizes) {
  const uint64_t part = n / kLanes, tail = kLanes * part;  // changes [tail, n) go with the last part
  for (uint64_t j = 0; j < part; ++j) {
    for (unsigned q = 0; q < kLanes; ++q) ++sizes[q][bucket_of[contexts[q * part + j]]];
  }
  for (uint64_t j = tail; j < n; ++j) ++sizes[kLanes - 1][bucket_of[contexts[j]]];
}

void scatter_lanes(const uint8_t* contexts, const uint8_t* tokens, uint64_t n, const uint8_t* bucket_of,
                   LanePointers& next) {
  const uint64_t part = n / kLanes, tail = kLanes * part;
  for (uint64_t j = 0; j < part; ++j) {
    for (unsigned q = 0; q < kLanes; ++q) *next[q][bucket_of[contexts[q * part + j]]]++ = tokens[q * part + j];
  }
  for (uint64_t j = tail; j < n; ++j) *next[kLanes - 1][bucket_of[contexts[j]]]++ = tokens[j];
}

#if defined(__x86_64__)
// ContextRule::bucket of the 64 contexts at `contexts`.
DCR_AVX512_VBMI inline __m512i bucket_ids(const uint8_t* contexts, const ContextRule& rule) {
  const __m512i above_first =
      _mm512_subs_epu8(_mm512_loadu_si512(contexts), _mm512_set1_epi8(static_cast<char>(rule.first)));
  return _mm512_min_epu8(above_first, _mm512_set1_epi8(static_cast<char>(rule.buckets - 1)));
}

// 64 changes at a time, one compare per bucket: counted, then each bucket's tokens compressed and
// stored whole at its pointer. The changes past the last 64 go one by one.
DCR_AVX512_VBMI void count_avx512(const uint8_t* contexts, uint64_t n, const ContextRule& rule,
                                  const uint8_t* bucket_of, uint64_t* sizes) {
  const uint64_t whole = n / 64 * 64;
  for (uint64_t j = 0; j < whole; j += 64) {
    const __m512i ids = bucket_ids(contexts + j, rule);
    for (unsigned b = 0; b < rule.buckets; ++b) {
      sizes[b] += _mm_popcnt_u64(_mm512_cmpeq_epi8_mask(ids, _mm512_set1_epi8(static_cast<char>(b))));
    }
  }
  for (uint64_t j = whole; j < n; ++j) ++sizes[bucket_of[contexts[j]]];
}

DCR_AVX512_VBMI void scatter_avx512(const uint8_t* contexts, const uint8_t* tokens, uint64_t n,
                                    const ContextRule& rule, const uint8_t* bucket_of, uint8_t** next) {
  const uint64_t whole = n / 64 * 64;
  for (uint64_t j = 0; j < whole; j += 64) {
    const __m512i ids = bucket_ids(contexts + j, rule);
    const __m512i group = _mm512_loadu_si512(tokens + j);
    for (unsigned b = 0; b < rule.buckets; ++b) {
      const __mmask64 in_bucket = _mm512_cmpeq_epi8_mask(ids, _mm512_set1_epi8(static_cast<char>(b)));
      _mm512_storeu_si512(next[b], _mm512_maskz_compress_epi8(in_bucket, group));
      next[b] += _mm_popcnt_u64(in_bucket);
    }
  }
  for (uint64_t j = whole; j < n; ++j) *next[bucket_of[contexts[j]]]++ = tokens[j];
}

// merge_buckets over whole groups of 64, one expand per bucket; returns the changes merged, fewer
// than the groups' where a bucket runs short (*short_bucket set).
DCR_AVX512_VBMI uint64_t merge_avx512(const uint8_t* contexts, uint64_t n, const ContextRule& rule,
                                      const uint8_t* tokens, uint64_t* next, const uint64_t* end, uint8_t* out,
                                      unsigned* short_bucket) {
  const uint64_t whole = n / 64 * 64;
  for (uint64_t j = 0; j < whole; j += 64) {
    const __m512i ids = bucket_ids(contexts + j, rule);
    __m512i merged = _mm512_setzero_si512();
    for (unsigned b = 0; b < rule.buckets; ++b) {
      const __mmask64 in_bucket = _mm512_cmpeq_epi8_mask(ids, _mm512_set1_epi8(static_cast<char>(b)));
      const uint64_t count = _mm_popcnt_u64(in_bucket);
      if (end[b] - next[b] < count) {
        *short_bucket = b;
        return j;
      }
      merged = _mm512_mask_expand_epi8(merged, in_bucket, _mm512_loadu_si512(tokens + next[b]));
      next[b] += count;
    }
    _mm512_storeu_si512(out + j, merged);
  }
  return whole;
}
#endif

}  // namespace

// Each bucket's tokens in change order, in a region of its own.
void ContextCoder::build(const uint8_t* contexts, const Section& value_tokens, Section* out) const {
  const unsigned buckets = rule_.buckets;
  uint8_t bucket_of[256];
  rule_.fill_table(bucket_of);
  out->reset(buckets + 2);
  out->streams[0].bytes = {rule_.shift, rule_.first, rule_.buckets};
  out->streams[0].raw_only = true;
  const bool wide = simd_level() >= SimdLevel::avx512_vbmi;
  LaneSizes sizes = {};
#if defined(__x86_64__)
  if (wide) count_avx512(contexts, n_, rule_, bucket_of, sizes[0]);
#endif
  if (!wide) count_lanes(contexts, n_, bucket_of, sizes);
  uint8_t* at = bucket_tokens_.reserve(n_ + kRegionSlack * buckets);
  LanePointers next;
  for (unsigned b = 0; b < buckets; ++b) {
    RawStream& stream = out->streams[1 + b];
    stream.view = at;
    for (unsigned q = 0; q < kLanes; ++q) {
      next[q][b] = at;
      at += sizes[q][b];
    }
    stream.view_size = static_cast<size_t>(at - stream.view);
    at += kRegionSlack;
  }
  const uint8_t* tokens = value_tokens.streams[0].data();
#if defined(__x86_64__)
  if (wide) scatter_avx512(contexts, tokens, n_, rule_, bucket_of, next[0]);
#endif
  if (!wide) scatter_lanes(contexts, tokens, n_, bucket_of, next);
  out->streams[buckets + 1] = value_tokens.streams[1];
}

bool merge_buckets(const uint8_t* contexts, uint64_t n, const ContextRule& rule, const uint8_t* bucket_of,
                   const uint8_t* tokens, uint64_t* next, const uint64_t* end, uint8_t* out, unsigned* short_bucket) {
  uint64_t j = 0;
#if defined(__x86_64__)
  if (simd_level() >= SimdLevel::avx512_vbmi) {
    j = merge_avx512(contexts, n, rule, tokens, next, end, out, short_bucket);
    if (j < n / 64 * 64) return false;
  }
#endif
  for (; j < n; ++j) {
    const unsigned b = bucket_of[contexts[j]];
    if (next[b] == end[b]) {
      *short_bucket = b;
      return false;
    }
    out[j] = tokens[next[b]++];
  }
  return true;
}

}  // namespace dcr
