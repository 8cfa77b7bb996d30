// Internal to the codec: value packing contexts (docs/frame-format.md). How far a float moves in
// ulps at one optimizer step depends on its magnitude: a small weight moves many ulps, a large one
// at most one. The receiver applies in place, so it holds every change's base bits before it
// decodes the change; their exponent is a free context. Each change's value token is coded with the
// rANS table of its context bucket, all of them in one stream (StreamCodec::write_buckets). The
// encoder chooses the buckets and writes the stream (context_coder.h); the receiver reads it back
// (context_reader.h).
#pragma once

#include <algorithm>
#include <cstdint>

namespace dcr {

constexpr unsigned kMaxContextBuckets = 64;

// The frame's rule (its first stream, three bytes): how the contexts fall into buckets.
// context = (base >> shift) & 0xff; contexts below `first` share bucket 0, those at or past
// first + buckets - 1 the last bucket.
struct ContextBuckets {
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

}  // namespace dcr
