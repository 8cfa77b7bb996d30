// Internal to the codec: the two payload sections of a frame (positions, then values), each a list
// of byte streams. Builders turn positions or words into raw streams; readers parse them back,
// validating every count, order and bound.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"
#include "dcr/core/region.h"
#include "src/codec/contexts.h"

namespace dcr {

struct RawStream {
  std::vector<uint8_t> bytes;  // the stream, unless it is a view
  // Or a view of bytes held elsewhere for as long as the section is used (the token writers'
  // buffers), so that finishing a stream copies nothing.
  const uint8_t* view = nullptr;
  size_t view_size = 0;
  const uint8_t* data() const { return view != nullptr ? view : bytes.data(); }
  size_t size() const { return view != nullptr ? view_size : bytes.size(); }
  bool try_zstd = false;
  bool raw_only = false;  // stored as is (no entropy stage) unless the encoder tries every coder
  bool counted = false;  // `hist` already holds the byte histogram
  bool coded = false;    // `bytes` are a whole stream already (header and code): written as they are
  Histogram hist;
  Histogram histogram() const;  // `hist` where counted, else counted now
};

struct Section {
  std::vector<RawStream> streams;
  void reset(size_t count);
  double estimate() const;  // coded size if each stream takes the better of raw and rANS
  size_t write(StreamCodec* codec, int zstd_level, bool zstd_everywhere, std::vector<uint8_t>* out) const;
};

void build_positions(PosCoding coding, const uint32_t* positions, uint64_t changed, uint64_t count,
                     Section* section);
void build_values(ValuePacking packing, const uint64_t* words, uint64_t changed, unsigned width,
                  Section* section);
// The gaps-joint position section (joint bytes, the escapes' gap tokens, every gap's extra bits) and
// the joint value section (the escapes' word tokens, their extra bits) of the changes whose gaps and
// words are the token pairs `gaps` and `values` (as build_positions and build_values write them).
void build_joint(const Section& gaps, const Section& values, Section* positions, Section* joint_values);

// A run of consecutive elements of a box: a row, a whole contiguous box, or one of a bundle's.
struct ElementRun {
  uint8_t* data;
  uint64_t elements;
};

// A region's elements as runs: the whole region when contiguous, else each row.
void append_runs(const Region& r, std::vector<ElementRun>* runs);

// A frame's changes, read in order a slice at a time: positions and words [0, done()) are decoded.
// Token-coded sections (the encoder's usual choice) decode as far as asked, so a receiver can apply
// one block of changes while it is in cache; other codings decode in full at open. Every count,
// order and bound is checked as it is decoded.
class ChangeReader {
 public:
  // Takes both sections of the payload of `header` from `payload`, which must then be consumed.
  // `base` is the frame's box as runs of elements holding its base bits (unchanged until their
  // changes are decoded), which value packing contexts needs; nullptr refuses such a frame.
  Status open(const FrameHeader& header, ByteReader* payload, StreamCodec* codec, uint32_t* positions,
              uint64_t* words, const std::vector<ElementRun>* base = nullptr);
  // Decodes the changes [done(), upto); `upto` is a multiple of kSlice or the frame's change count.
  Status decode(uint64_t upto);
  uint64_t done() const { return done_; }
  static constexpr uint64_t kSlice = 32;
  // Leaves the words of value packing contexts to values_through, so that a receiver decodes them
  // once their base bits are in cache (every other packing decodes them in decode).
  void defer_values() { defer_ = contexts_; }
  // Decodes the deferred words of changes up to `upto` (<= done()); nothing to do when none are.
  Status values_through(uint64_t upto) { return defer_ && upto > values_done_ ? decode_contexts(upto) : Status::ok(); }

 private:
  // One stream pair of tokens (symbols, then their extra bits), decoded in order.
  struct Tokens {
    StreamCodec* codec = nullptr;
    int slot = 0;
    const char* what = "";
    const uint8_t* symbols = nullptr;
    const uint8_t* extras = nullptr;
    size_t extra_bytes = 0;
    uint64_t n = 0;
    uint64_t done = 0;
    uint64_t bit_pos = 0;
    Status open(ByteReader* reader, StreamCodec* codec, uint64_t n, int slot, const char* what);
    // The extra bits stream alone, for symbols that come from elsewhere (gaps-joint).
    Status open_extras(ByteReader* reader, StreamCodec* codec, uint64_t n, const uint8_t* symbols, int slot,
                       const char* what);
    template <typename Prefix, typename Emit>
    Status decode(uint64_t upto, Prefix prefix, Emit emit);  // the symbols, then detokenize
    template <typename Prefix, typename Emit>
    Status detokenize(uint64_t upto, Prefix prefix, Emit emit);
  };

  Status open_positions(ByteReader* payload);
  Status open_joint(ByteReader* payload);
  Status open_values(ByteReader* payload);
  Status decode_gaps(uint64_t upto);
  Status decode_words(uint64_t upto, Tokens* tokens, uint64_t* out, bool symbols = true);
  Status decode_joint(uint64_t upto);
  Status open_contexts(ByteReader* payload);
  Status decode_contexts(uint64_t upto);
  FrameHeader h_;
  const std::vector<ElementRun>* base_ = nullptr;
  size_t base_run_ = 0;  // decode_contexts' run, which holds box elements [run_start_, run_end_)
  uint64_t run_start_ = 0, run_end_ = 0;
  StreamCodec* codec_ = nullptr;
  uint32_t* positions_ = nullptr;
  uint64_t* words_ = nullptr;
  Tokens gaps_, values_;
  bool lazy_gaps_ = false, lazy_values_ = false, joint_ = false;
  uint64_t next_ = 0;  // the position after the last decoded change
  uint64_t done_ = 0;
  // gaps-joint: the joint bytes, the escapes' gap tokens and words (values_ holds their tokens)
  // decoded ahead in batches, and the gap tokens the two merge into for gaps_.
  const uint8_t* joint_bytes_ = nullptr;
  const uint8_t* escape_gaps_ = nullptr;
  uint64_t escapes_ = 0, escapes_ready_ = 0, escapes_used_ = 0;
  std::vector<uint64_t> escape_words_;
  std::vector<uint8_t> gap_tokens_;
  // contexts: the token stream, each token decoded by the table of its bucket, which comes from
  // the base bits at its position, as far as decoded.
  bool contexts_ = false;
  bool defer_ = false;
  uint64_t values_done_ = 0;
  ContextRule rule_;
  uint8_t bucket_of_[256];         // context -> bucket
  std::vector<uint8_t> buckets_;   // each change's bucket, read as far as buckets_done_
  uint64_t buckets_done_ = 0;
  Tokens context_values_;          // the token stream's bytes and the extra bits
};

}  // namespace dcr
