#include "src/codec/contexts/context_reader.h"

#include <algorithm>
#include <string>

#include "dcr/codec/scan.h"
#include "src/codec/common/buffer.h"

namespace dcr {

Status ContextReader::open(ByteReader* payload, StreamCodec* codec, uint64_t changed, unsigned width,
                           const std::vector<ElementRun>* base) {
  codec_ = codec;
  width_ = width;
  base_ = base;
  base_run_ = 0;
  run_start_ = 0;
  run_end_ = base != nullptr && !base->empty() ? (*base)[0].elements : 0;
  done_ = 0;
  DCR_REQUIRE(base != nullptr && !base->empty(), Code::invalid_argument,
              "value packing contexts decodes against the base bits: apply the frame to its destination");
  const uint8_t* bytes;
  size_t size;
  DCR_TRY(codec->read(payload, 3, 2, &bytes, &size));
  DCR_REQUIRE(size == 3, Code::corrupt, "context rule stream holds " + std::to_string(size) + " bytes, expected 3");
  rule_ = ContextBuckets{bytes[0], bytes[1], bytes[2]};
  DCR_REQUIRE(rule_.shift < 8 * width && rule_.buckets >= 1 && rule_.buckets <= kMaxContextBuckets &&
                  rule_.first + rule_.buckets <= 256,
              Code::corrupt, "context rule (shift " + std::to_string(rule_.shift) + ", first " +
                                 std::to_string(rule_.first) + ", buckets " + std::to_string(rule_.buckets) +
                                 ") is out of range");
  rule_.fill_table(bucket_of_);
  grow_to(&buckets_, changed);
  buckets_done_ = 0;
  TokenReader& t = tokens_;
  t.codec = codec;
  t.slot = -1;  // the symbols decode in decode(), by their buckets
  t.what = "context value token";
  t.n = changed;
  t.done = t.bit_pos = 0;
  DCR_TRY(codec->open_buckets(payload, changed, rule_.buckets, 2, &t.symbols));
  return codec->read(payload, 8 * changed, 3, &t.extras, &t.extra_bytes);
}

namespace {

// The buckets of changes [j, n) that lie in the run of box elements [start, end), from the base
// bits of `run`, elements of W bytes (0: of `width`); returns the first change past them.
template <unsigned W>
uint64_t read_buckets(const uint8_t* run, uint64_t start, uint64_t end, const uint32_t* positions, uint64_t j,
                      uint64_t n, unsigned shift, const uint8_t* bucket_of, uint8_t* buckets, unsigned width = W) {
  for (; j < n && positions[j] < end; ++j) {
    buckets[j] = bucket_of[static_cast<uint8_t>(load_word(run, positions[j] - start, W == 0 ? width : W) >> shift)];
  }
  return j;
}

}  // namespace

// Each change's token is decoded by the table of the bucket of the base bits at its position (not
// yet scattered over: changes are applied only once decoded). The changes' buckets are read first,
// then their tokens decoded and detokenised with their extra bits like any token pair.
Status ContextReader::decode(uint64_t upto, uint64_t ahead, const uint32_t* positions, uint64_t* words) {
  const unsigned width = width_, shift = rule_.shift;
  const std::vector<ElementRun>& runs = *base_;
  uint8_t* buckets = buckets_.data();
  for (uint64_t j = buckets_done_; j < ahead;) {
    while (positions[j] >= run_end_) {  // positions ascend, so the runs are walked once
      DCR_REQUIRE(base_run_ + 1 < runs.size(), Code::corrupt,
                  "change position " + std::to_string(positions[j]) + " lies past the frame's box");
      run_start_ = run_end_;
      run_end_ += runs[++base_run_].elements;
    }
    const uint8_t* run = runs[base_run_].data;
    j = width == 2 ? read_buckets<2>(run, run_start_, run_end_, positions, j, ahead, shift, bucket_of_, buckets)
                   : read_buckets<0>(run, run_start_, run_end_, positions, j, ahead, shift, bucket_of_, buckets, width);
  }
  buckets_done_ = std::max(buckets_done_, ahead);
  DCR_TRY(codec_->decode_buckets(2, ahead, buckets));
  done_ = upto;
  return decode_token_words(&tokens_, upto, width, words, false);
}

}  // namespace dcr
