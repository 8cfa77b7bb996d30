#include "src/codec/contexts.h"

#include <cstring>

#include "dcr/codec/stream.h"
#include "src/codec/sections.h"

namespace dcr {

ContextCoder::ContextCoder() : rows_(256) {}

// The estimated rule and token streams for contexts [first, first + buckets) (the tails joining the
// edge buckets), each bucket's tokens coded with a table of its own.
double ContextCoder::estimate(unsigned first, unsigned buckets) const {
  double total = 6;  // the rule's raw stream: coder, two varints, three bytes
  Histogram bucket{};
  uint64_t size = 0;
  unsigned current = 0;
  const ContextRule rule{0, static_cast<uint8_t>(first), static_cast<uint8_t>(buckets)};
  for (unsigned c = 0; c < 256; ++c) {
    const unsigned b = rule.bucket(c);
    if (b != current) {
      total += StreamCodec::estimate(bucket, size);
      bucket.fill(0);
      size = 0;
      current = b;
    }
    if (per_context_[c] == 0) continue;
    for (unsigned s = 0; s < 256; ++s) bucket[s] += rows_[c][s];
    size += per_context_[c] * stride_;
  }
  return total + StreamCodec::estimate(bucket, size);
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
  for (uint64_t j = 0; j < n; j += stride_) ++rows_[contexts[j]][tokens[j]];
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

// Each bucket's tokens in change order. The changes go in kLanes equal parts, side by side: each
// part has its own count and write pointer per bucket, so a run of changes in one bucket is
// kLanes chains through memory instead of one (a pointer's increment must land before the next
// use). Part q's tokens of a bucket follow part q-1's, so the streams are the same bytes.
void ContextCoder::build(const uint8_t* contexts, const Section& value_tokens, Section* out) const {
  constexpr unsigned kLanes = 4;
  const unsigned buckets = rule_.buckets;
  uint8_t bucket_of[256];
  rule_.fill_table(bucket_of);
  out->reset(buckets + 2);
  out->streams[0].bytes = {rule_.shift, rule_.first, rule_.buckets};
  out->streams[0].raw_only = true;
  const uint64_t part = n_ / kLanes, tail = kLanes * part;  // changes [tail, n_) go with the last part
  uint64_t sizes[kLanes][kMaxContextBuckets] = {};
  for (uint64_t j = 0; j < part; ++j) {
    for (unsigned q = 0; q < kLanes; ++q) ++sizes[q][bucket_of[contexts[q * part + j]]];
  }
  for (uint64_t j = tail; j < n_; ++j) ++sizes[kLanes - 1][bucket_of[contexts[j]]];
  uint8_t* storage = bucket_tokens_.reserve(n_);
  uint8_t* next[kLanes][kMaxContextBuckets];
  uint64_t at = 0;
  for (unsigned b = 0; b < buckets; ++b) {
    RawStream& stream = out->streams[1 + b];
    stream.view = storage + at;
    for (unsigned q = 0; q < kLanes; ++q) {
      next[q][b] = storage + at;
      at += sizes[q][b];
    }
    stream.view_size = static_cast<size_t>(storage + at - stream.view);
  }
  const uint8_t* tokens = value_tokens.streams[0].data();
  for (uint64_t j = 0; j < part; ++j) {
    for (unsigned q = 0; q < kLanes; ++q) *next[q][bucket_of[contexts[q * part + j]]]++ = tokens[q * part + j];
  }
  for (uint64_t j = tail; j < n_; ++j) *next[kLanes - 1][bucket_of[contexts[j]]]++ = tokens[j];
  out->streams[buckets + 1] = value_tokens.streams[1];
}

}  // namespace dcr
