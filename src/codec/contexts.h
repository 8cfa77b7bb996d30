// Internal to the codec: value packing contexts (docs/frame-format.md). How far a float moves in
// ulps at one optimizer step depends on its magnitude: a small weight moves many ulps, a large one
// at most one. The receiver applies in place, so it holds every change's base bits before it
// decodes the change; their exponent is a free context. Each change's value token goes to the
// stream of its context bucket, each bucket with its own rANS table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dcr/codec/rans.h"
#include "src/codec/buffer.h"

namespace dcr {

constexpr unsigned kMaxContextBuckets = 64;

// context = (base >> shift) & 0xff; contexts below `first` share bucket 0, those at or past
// first + buckets - 1 the last bucket.
struct ContextRule {
  uint8_t shift = 0;
  uint8_t first = 0;
  uint8_t buckets = 1;
  // The bucket of context c (an already shifted byte).
  unsigned bucket(unsigned c) const { return std::min<unsigned>(c < first ? 0 : c - first, buckets - 1u); }
  // Every context's bucket.
  void fill_table(uint8_t table[256]) const {
    for (unsigned c = 0; c < 256; ++c) table[c] = static_cast<uint8_t>(bucket(c));
  }
};

struct Section;

// Chooses the rule for n changes from their base contexts ((base >> shift) & 0xff) and value
// tokens, by the estimated size of the section, and builds the section: a raw stream of the rule's
// three bytes (shift, first, buckets), one stream of value tokens per bucket, and the tokens' extra
// bits (stream 1 of `value_tokens`, shared as is).
class ContextCoder {
 public:
  ContextCoder();
  // Returns the estimated bytes of the section's rule and token streams (not its extra bits).
  double choose(const uint8_t* contexts, const uint8_t* tokens, uint64_t n, uint8_t shift);
  const ContextRule& rule() const { return rule_; }
  void build(const uint8_t* contexts, const Section& value_tokens, Section* out) const;

 private:
  double estimate(unsigned first, unsigned buckets) const;
  double merged_estimate(unsigned begin, unsigned end) const;
  ContextRule rule_;
  uint64_t n_ = 0;
  uint64_t stride_ = 1;          // the histograms count every stride_-th change
  uint64_t per_context_[256];
  unsigned symbols_ = 256;       // the sampled tokens lie below it
  double single_[256];           // each context's estimate as a bucket of its own
  std::vector<Histogram> rows_;  // value tokens by context (rows of contexts present only)
  mutable Buffer<uint8_t> bucket_tokens_;  // the built section's bucket streams are views of it
};

// The decoder's side, the inverse of build's scatter: out[j] for changes [0, n) is the next token
// of the bucket of contexts[j] (bucket_of: ContextRule::fill_table), bucket b's being
// tokens[next[b], end[b]); `tokens` must be readable 64 bytes past the last end. Returns false,
// with the bucket in *short_bucket, where a bucket has fewer tokens than its changes.
bool merge_buckets(const uint8_t* contexts, uint64_t n, const ContextRule& rule, const uint8_t* bucket_of,
                   const uint8_t* tokens, uint64_t* next, const uint64_t* end, uint8_t* out, unsigned* short_bucket);

}  // namespace dcr
