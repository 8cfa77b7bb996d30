// Internal to the codec: the encoding side of value packing contexts (context_buckets.h).
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/rans.h"
#include "dcr/codec/stream.h"
#include "src/codec/common/buffer.h"
#include "src/codec/contexts/context_buckets.h"

namespace dcr {

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
  const ContextBuckets& rule() const { return rule_; }
  void build(const uint8_t* contexts, const Section& value_tokens, StreamCodec* codec, Section* out);

 private:
  double estimate(unsigned first, unsigned buckets) const;
  double merged_estimate(unsigned begin, unsigned end) const;
  ContextBuckets rule_;
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
