// Internal to the codec: value packing contexts (docs/frame-format.md). How far a float moves in
// ulps at one optimizer step depends on its magnitude: a small weight moves many ulps, a large one
// at most one. The receiver applies in place, so it holds every change's base bits before it
// decodes the change; their exponent is a free context. Each change's value token is coded with the
// rANS table of its context bucket, all of them in one stream (StreamCodec::write_buckets).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dcr/codec/rans.h"
#include "dcr/codec/stream.h"
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

// Each of n changes' context, (word >> shift) & 0xff, from its base word.
void contexts_of(const uint16_t* words, uint64_t n, unsigned shift, uint8_t* contexts);

// Chooses the rule for n changes from their base contexts ((base >> shift) & 0xff) and value
// tokens, by the estimated size of the section, and builds the section: a raw stream of the rule's
// three bytes (shift, first, buckets), the token stream, each token by its bucket's table, and the
// tokens' extra bits (stream 1 of `value_tokens`, shared as is).
class ContextCoder {
 public:
  ContextCoder();
  // Returns the estimated bytes of the section's rule and token streams (not its extra bits).
  double choose(const uint8_t* contexts, const uint8_t* tokens, uint64_t n, uint8_t shift);
  const ContextRule& rule() const { return rule_; }
  void build(const uint8_t* contexts, const Section& value_tokens, StreamCodec* codec, Section* out);

 private:
  double estimate(unsigned first, unsigned buckets) const;
  double merged_estimate(unsigned begin, unsigned end) const;
  ContextRule rule_;
  uint64_t n_ = 0;
  uint64_t stride_ = 1;          // the histograms count every stride_-th change
  Histogram per_context_;  // changes by context, every stride_-th counted
  unsigned symbols_ = 256;       // the sampled tokens lie below it
  double single_[256];           // each context's estimate as a bucket of its own
  std::vector<Histogram> rows_;  // value tokens by context (rows of contexts present only)
  Buffer<uint8_t> buckets_;      // each change's bucket
  std::vector<uint32_t> counts_;  // tokens by bucket, for the tables: two interleaved sets
  std::vector<Histogram> bucket_counts_;
};

}  // namespace dcr
