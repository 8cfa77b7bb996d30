// Internal to the codec: the reading side of value packing contexts (context_buckets.h). Each
// change's value token is decoded by the table of its bucket, which comes from the base bits at its
// position: a change's word is decoded once its position is, and before anything is scattered over
// its element.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/byte_io.h"
#include "dcr/codec/stream.h"
#include "dcr/core/status.h"
#include "src/codec/contexts/context_buckets.h"
#include "src/codec/decode/element_run.h"
#include "src/codec/tokens/token_reader.h"

namespace dcr {

class ContextReader {
 public:
  // Takes the value section of a frame of `changed` changes of `width`-byte elements from
  // `payload`: the rule stream, then the token stream (slot 2) and its extra bits (slot 3). `base`
  // is the frame's box as runs of elements holding its base bits; nullptr refuses the frame.
  Status open(ByteReader* payload, StreamCodec* codec, uint64_t changed, unsigned width,
              const std::vector<ElementRun>* base);
  // Words [done(), upto) into `words`, from the changes' `positions`, which are decoded at least to
  // `ahead` (>= upto; a whole slice of the reader's, or every change): the buckets and token symbols
  // are decoded that far, in whole groups of the stream's states, while those base bits are in place.
  Status decode(uint64_t upto, uint64_t ahead, const uint32_t* positions, uint64_t* words);
  uint64_t done() const { return done_; }

 private:
  StreamCodec* codec_ = nullptr;
  unsigned width_ = 2;
  const std::vector<ElementRun>* base_ = nullptr;
  size_t base_run_ = 0;  // the run the buckets are read from, which holds box elements [run_start_, run_end_)
  uint64_t run_start_ = 0, run_end_ = 0;
  uint64_t done_ = 0;
  ContextBuckets rule_;
  uint8_t bucket_of_[256];         // context -> bucket
  std::vector<uint8_t> buckets_;   // each change's bucket, read as far as buckets_done_
  uint64_t buckets_done_ = 0;
  TokenReader tokens_;             // the token stream's bytes and the extra bits
};

}  // namespace dcr
